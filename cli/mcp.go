package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

// mcpOptions are the flags shared by `mcp init` and `mcp config`.
type mcpOptions struct {
	command string // --command: the boxkite-mcp to run
	withKey bool   // --with-key: write the URL and key into the entry
}

func (o *mcpOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.command, "command", "", "`path` of boxkite-mcp (default: next to boxkite, else on PATH)")
	cmd.Flags().BoolVar(&o.withKey, "with-key", false, "write the server URL and API key into the entry (BOXKITE_BASE_URL, BOXKITE_API_KEY) instead of letting boxkite-mcp read ~/.boxkite")
}

func newMCPCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:   "mcp",
		Short: "Connect MCP clients (Claude Code, Cursor, Codex, …) to boxkite",
		Long: `boxkite-mcp is an MCP server over stdio with 31 tools: create and destroy
sandboxes, run commands, edit and search files, images, volumes and MCP
connections. It reads the same configuration as this CLI (~/.boxkite), or
BOXKITE_BASE_URL and BOXKITE_API_KEY. A boxkite server also serves the
same tools over Streamable HTTP at /mcp/ (Authorization: Bearer <key>).

mcp init adds boxkite to an MCP client's config file, keeping everything
else in it; mcp config prints the entry for clients not listed.`,
		GroupID: groupSettings,
	})
	cmd.AddCommand(newMCPInitCmd(app), newMCPConfigCmd(app))
	return cmd
}

func mcpClientNames() []string {
	var names []string
	for _, c := range mcpClients() {
		names = append(names, c.name)
	}
	return names
}

func newMCPInitCmd(app *App) *cobra.Command {
	var (
		opts   mcpOptions
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "init " + strings.Join(mcpClientNames(), "|"),
		Short: "Add boxkite to an MCP client's config file",
		Long: `Add a "boxkite" server entry to an MCP client's config file, creating
the file if needed and keeping everything else in it. An existing boxkite
entry is replaced. Restart the client afterwards.

  claude-code     ~/.claude.json (user scope: every project)
  cursor          ~/.cursor/mcp.json
  windsurf        ~/.codeium/windsurf/mcp_config.json
  claude-desktop  claude_desktop_config.json in the OS's Claude directory
  codex           ~/.codex/config.toml ([mcp_servers.boxkite])

--dry-run prints the file as it would be written, and writes nothing.`,
		Example: `  boxkite mcp init claude-code
  boxkite mcp init codex --dry-run
  boxkite mcp init cursor --with-key --url https://boxkite.example.com --api-key bxk_live_…`,
		ValidArgs: mcpClientNames(),
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give the client: %s", strings.Join(mcpClientNames(), ", "))
			}
			if _, ok := lookupMCPClient(args[0]); !ok {
				return fmt.Errorf("unknown MCP client %q; boxkite knows %s", args[0], strings.Join(mcpClientNames(), ", "))
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _ := lookupMCPClient(args[0])
			entry, err := opts.entry(app)
			if err != nil {
				return err
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("find home directory: %w", err)
			}
			path, data, perm, err := readClientConfig(c.path(home, runtime.GOOS, os.Getenv))
			if err != nil {
				return err
			}
			merged, change, err := c.merge(data, entry)
			if err != nil {
				return fmt.Errorf("update %s: %w", path, err)
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if dryRun {
				fmt.Fprintf(errOut, "dry run: %s would be written as follows (nothing was written)\n", path)
				_, err := out.Write(merged)
				return err
			}
			if change == mcpUnchanged {
				fmt.Fprintf(out, "boxkite is already in %s's config: %s\n", c.title, path)
				return nil
			}
			if err := writeFileAtomic(path, merged, perm); err != nil {
				return err
			}
			verb := "Added boxkite to"
			if change == mcpUpdated {
				verb = "Updated boxkite in"
			}
			fmt.Fprintf(out, "%s %s's config: %s\nRestart %s to load it.\n", verb, c.title, path, c.title)
			return nil
		},
	}
	opts.register(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the new config file instead of writing it")
	return cmd
}

// readClientConfig reads an MCP client's config file, through a symlink so
// that the link stays one (dotfiles repos), and the mode to write it back
// with: its own, or 0600 for a new file since it may hold an API key. A
// missing file reads as empty.
func readClientConfig(path string) (string, []byte, fs.FileMode, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	data, err := os.ReadFile(path)
	perm := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", nil, 0, fmt.Errorf("read %s: %w", path, err)
	default:
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	return path, data, perm, nil
}

func newMCPConfigCmd(app *App) *cobra.Command {
	var opts mcpOptions
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print boxkite's MCP server entry as JSON",
		Long: `Print the "mcpServers" JSON that runs boxkite-mcp, for MCP clients that
mcp init does not know: paste the "boxkite" entry into the client's config.`,
		Example: "  boxkite mcp config\n  boxkite mcp config --with-key",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			entry, err := opts.entry(app)
			if err != nil {
				return err
			}
			doc := map[string]map[string]jsonEntry{"mcpServers": {mcpServerName: mcpClient{}.jsonEntry(entry)}}
			b, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				return fmt.Errorf("encode mcp config: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			return err
		},
	}
	opts.register(cmd)
	return cmd
}

// entry builds boxkite's server entry: the boxkite-mcp to run and, with
// --with-key, the URL and key; otherwise boxkite-mcp reads ~/.boxkite
// itself (BOXKITE_HOME is passed on when set, since clients start servers
// without the shell's environment).
func (o *mcpOptions) entry(app *App) (mcpEntry, error) {
	e := mcpEntry{Command: o.command}
	if e.Command == "" {
		e.Command = findMCPBinary()
		if !filepath.IsAbs(e.Command) {
			fmt.Fprintln(app.IO.ErrOut, "warning: boxkite-mcp is not next to boxkite or on PATH; install it (go install github.com/boxkite/boxkite/cmd/boxkite-mcp@latest) or pass --command")
		}
	}
	if o.withKey {
		cfg, err := app.Config()
		if err != nil {
			return e, err
		}
		if cfg.APIKey == "" {
			return e, &hintError{
				err:  errors.New("--with-key: no API key is configured"),
				hint: "pass --api-key, set BOXKITE_API_KEY, or run `boxkite config set-key`",
			}
		}
		e.Env = map[string]string{"BOXKITE_BASE_URL": cfg.BaseURL, "BOXKITE_API_KEY": cfg.APIKey}
	} else if h := os.Getenv(envHome); h != "" {
		if abs, err := filepath.Abs(h); err == nil {
			h = abs
		}
		e.Env = map[string]string{envHome: h}
	}
	return e, nil
}

// findMCPBinary is boxkite-mcp next to this executable, else on PATH, else
// the bare name (the client will say it cannot start it).
func findMCPBinary() string {
	name := "boxkite-mcp"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return name
}
