package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// buildInfo is the JSON shape of `boxkite version --json`.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Server is the current context's server, absent with --client.
	Server *serverVersion `json:"server,omitempty"`
}

// serverVersion is what the server's /health says of its build.
type serverVersion struct {
	Context string `json:"context"`
	URL     string `json:"url"`
	Version string `json:"version,omitempty"` // absent when it did not answer
	Error   string `json:"error,omitempty"`   // why it did not
}

// serverVersionTimeout bounds the /health call: version must stay quick
// when the server is down or far away.
const serverVersionTimeout = 3 * time.Second

// askServerVersion asks the current context's server for its version.
func askServerVersion(ctx context.Context, app *App) *serverVersion {
	cfg, err := app.Config()
	if err != nil {
		return &serverVersion{Error: message(err)}
	}
	sv := &serverVersion{Context: cfg.Context, URL: cfg.BaseURL}
	c, err := app.Client()
	if err != nil {
		sv.Error = message(err)
		return sv
	}
	ctx, cancel := context.WithTimeout(ctx, serverVersionTimeout)
	defer cancel()
	h, err := c.Health(ctx)
	switch {
	case err != nil:
		sv.Error = message(err)
	case h.Version == "":
		sv.Version = "unknown"
	default:
		sv.Version = h.Version
	}
	return sv
}

// readBuildInfo combines the version given to the App (from the -X
// main.version ldflag or the module version) with what the Go toolchain
// recorded about the build.
func readBuildInfo(version string) buildInfo {
	bi := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
	}
	return bi
}

func newVersionCmd(app *App) *cobra.Command {
	var (
		out        outputFlags
		clientOnly bool
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of boxkite and of the server it talks to",
		Example: `  boxkite version
  boxkite version --client
  boxkite version --json --jq .server.version`,
		Long: `Print the version of boxkite, and the version the current context's server
reports (GET /health), or why it did not answer; that does not fail the
command. --client prints the CLI's alone, as --version does.`,
		GroupID: groupSettings,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			bi := readBuildInfo(app.Version)
			if !clientOnly {
				bi.Server = askServerVersion(cmd.Context(), app)
			}
			if asJSON {
				return out.write(app.IO, bi)
			}
			fmt.Fprintln(app.IO.Out, versionLine(bi))
			if sv := bi.Server; sv != nil {
				if sv.Error != "" {
					fmt.Fprintf(app.IO.Out, "server: %s (context %s)\n", sv.Error, orNone(sv.Context))
				} else {
					fmt.Fprintf(app.IO.Out, "server: boxkite-server %s at %s (context %s)\n", sv.Version, sv.URL, sv.Context)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the CLI's version only; do not ask the server")
	out.register(cmd, buildInfo{})
	return cmd
}

// versionLine is what `boxkite version` and `boxkite --version` print.
func versionLine(bi buildInfo) string {
	commit := ""
	if bi.Commit != "" {
		commit = bi.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if bi.Modified {
			commit += "-dirty"
		}
		commit = ", commit " + commit
	}
	return fmt.Sprintf("boxkite %s (%s %s%s)", bi.Version, bi.GoVersion, bi.Platform, commit)
}
