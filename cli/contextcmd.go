package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func newContextCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "context",
		Aliases: []string{"contexts", "ctx"},
		Short:   "List, switch, add and remove the control planes the CLI talks to",
		Long: `A context names a control plane: its URL and API key, kept in a file of its
own (mode 0600) under ~/.boxkite. Two are built in: local, the server
'boxkite up' starts (local.toml), always there; and hosted, config.toml,
written by login, signup and config set-url/set-key. 'boxkite context add'
adds more, each in contexts/NAME.toml.

Commands use --context NAME, else BOXKITE_CONTEXT, else the context
'boxkite context use' chose; when none was chosen, hosted once config.toml
has a URL and a key, local otherwise. --url and --api-key (and BOXKITE_URL,
BOXKITE_API_KEY) still override the context's values. login, signup,
logout and config set-url/set-key change the chosen context's file.
'boxkite status' and the TUI's title name the context in use.`,
		Example: `  boxkite context add staging https://boxkite.staging.example --api-key bxk_live_…
  boxkite --context staging session ls
  boxkite context use staging
  boxkite context use local`,
		GroupID: groupSettings,
	})
	cmd.AddCommand(newContextLsCmd(app), newContextUseCmd(app), newContextAddCmd(app), newContextRmCmd(app))
	return cmd
}

// contextInfo is one row of `context ls`; the API key is masked.
type contextInfo struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	BaseURL string `json:"base_url"`
	APIKey  string `json:"api_key"`
	File    string `json:"file"`
}

// listContexts reads every context of home; current is the one in use.
func listContexts(home, current string) ([]contextInfo, error) {
	names, err := contextNames(home)
	if err != nil {
		return nil, err
	}
	out := make([]contextInfo, 0, len(names))
	for _, name := range names {
		path := contextFile(home, name)
		fc, err := readFileConfig(path)
		if err != nil {
			return nil, err
		}
		if name == contextLocal && fc.BaseURL == "" {
			fc.BaseURL = DefaultURL // before the first up
		}
		out = append(out, contextInfo{Name: name, Current: name == current, BaseURL: fc.BaseURL, APIKey: maskKey(fc.APIKey), File: path})
	}
	return out, nil
}

// contextInUse is the context commands use now: the chosen one, else the
// automatic choice (hosted once config.toml has a URL and a key).
func contextInUse(app *App, home string) (string, error) {
	name, _, err := chosenContext(home, app.flags)
	if err != nil || name != "" {
		return name, err
	}
	hosted, err := readFileConfig(contextFile(home, contextHosted))
	if err != nil {
		return "", err
	}
	if hosted.BaseURL != "" && hosted.APIKey != "" {
		return contextHosted, nil
	}
	return contextLocal, nil
}

func newContextLsCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use: "ls",
		Example: `  boxkite context ls
  boxkite context ls --json name,base_url`,
		Aliases: []string{"list"},
		Short:   "List the contexts; * marks the one in use",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			home, _, err := resolveHome()
			if err != nil {
				return err
			}
			current, err := contextInUse(app, home)
			if err != nil {
				return err
			}
			infos, err := listContexts(home, current)
			if err != nil {
				return err
			}
			if asJSON {
				return out.write(app.IO, infos)
			}
			tw := newTable(app.IO.Out)
			// The name first: a narrow terminal cuts the other columns.
			tw.Header(app.IO.Color, "NAME\tCURRENT\tURL\tAPI KEY")
			for _, c := range infos {
				mark := ""
				if c.Current {
					mark = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, mark, c.BaseURL, orNone(c.APIKey))
			}
			return tw.Flush()
		},
	}
	out.register(cmd, contextInfo{})
	pageable(cmd)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func newContextUseCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:               "use NAME",
		Short:             "Make NAME the context every command uses",
		Example:           "  boxkite context use staging\n  boxkite context use local",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkContextName(name); err != nil {
				return err
			}
			home, err := existingContext(name)
			if err != nil {
				return err
			}
			if err := writeCurrentContext(home, name); err != nil {
				return err
			}
			infos, err := listContexts(home, name)
			if err != nil {
				return err
			}
			for _, c := range infos {
				if c.Name == name {
					fmt.Fprintf(app.IO.ErrOut, "switched to context %s (%s)\n", name, c.BaseURL)
				}
			}
			if env := os.Getenv(envContext); env != "" && env != name {
				fmt.Fprintf(app.IO.ErrOut, "note: %s=%s still picks %s in this shell; unset it to use %s\n", envContext, env, env, name)
			}
			return nil
		},
	}
}

func newContextAddCmd(app *App) *cobra.Command {
	var use bool
	cmd := &cobra.Command{
		Use:   "add NAME URL [--api-key KEY]",
		Short: "Add a context for the control plane at URL",
		Long: `Add a context named NAME for the control plane at URL, in
~/.boxkite/contexts/NAME.toml (mode 0600). --api-key gives its API key;
--api-key - reads the key from stdin, which keeps it out of shell history.
Without one, log in later: 'boxkite --context NAME login'. --use switches
to it at once.`,
		Example: `  boxkite context add staging https://boxkite.staging.example --api-key bxk_live_…
  pass show boxkite/staging | boxkite context add staging https://boxkite.staging.example --api-key -
  boxkite context add other http://127.0.0.1:9000 --use`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, u := args[0], strings.TrimRight(args[1], "/")
			if err := checkContextName(name); err != nil {
				return err
			}
			if name == contextLocal || name == contextHosted {
				return usageErrorf("pick another name; 'boxkite login' and 'boxkite config set-url' set up hosted",
					"%s is a built-in context", name)
			}
			if err := checkRemoteURL(u, args[1]); err != nil {
				return err
			}
			key, err := contextKey(app)
			if err != nil {
				return err
			}
			home, _, err := resolveHome()
			if err != nil {
				return err
			}
			if ok, err := contextExists(home, name); err != nil {
				return err
			} else if ok {
				return &hintError{
					err:  fmt.Errorf("context %s exists already", name),
					hint: fmt.Sprintf("change it with 'boxkite --context %s config set-url URL', or remove it with 'boxkite context rm %s'", name, name),
				}
			}
			path := contextFile(home, name)
			if err := updateFileConfig(path, func(fc *fileConfig) { fc.BaseURL, fc.APIKey = u, key }); err != nil {
				return fmt.Errorf("add context %s: %w", name, err)
			}
			fmt.Fprintf(app.IO.ErrOut, "added context %s (%s) in %s\n", name, u, path)
			if use {
				if err := writeCurrentContext(home, name); err != nil {
					return err
				}
				fmt.Fprintf(app.IO.ErrOut, "switched to context %s\n", name)
			}
			if key == "" {
				fmt.Fprintf(app.IO.ErrOut, "hint: it has no API key yet: run 'boxkite --context %s login' or 'boxkite --context %s config set-key'\n", name, name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&use, "use", false, "switch to the new context")
	return cmd
}

// contextKey is the --api-key given to context add: "" when none, the
// first line of stdin for "-".
func contextKey(app *App) (string, error) {
	f := lookupFlag(app.flags, "api-key")
	if f == nil || !f.Changed {
		return "", nil
	}
	key := f.Value.String()
	if key == "-" {
		line, ok := readKeyLine(app)
		if !ok {
			return "", usageErrorf("pipe the key on stdin, or pass --api-key KEY", "--api-key -: nothing on stdin")
		}
		key = line
	}
	return checkAPIKey(key)
}

// checkRemoteURL accepts an http(s) URL, plain http only for this machine:
// API keys must not cross a network in the clear.
func checkRemoteURL(u, given string) error {
	if err := checkBaseURL(u); err != nil {
		return usageErrorf("use a URL such as https://boxkite.example.com", "invalid URL %q: %v", given, err)
	}
	if strings.HasPrefix(u, "http://") && !isLoopbackURL(u) {
		return usageErrorf("use https://, or http:// only for localhost", "refusing plain http for a remote server: %s", u)
	}
	return nil
}

func newContextRmCmd(app *App) *cobra.Command {
	var conf confirmation
	cmd := &cobra.Command{
		Use: "rm NAME",
		Example: `  boxkite context rm staging
  boxkite context rm staging --yes`,
		Short: "Remove a context and the API key stored with it",
		Long: `Remove a context and the API key stored with it. The key stays valid on the
server: revoke it first with 'boxkite --context NAME logout' if it should
stop working. local cannot be removed ('boxkite down' stops its server).
When NAME was the current context, the automatic choice applies again. On a
terminal it asks first; elsewhere it needs --yes.`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkContextName(name); err != nil {
				return err
			}
			if name == contextLocal {
				return usageErrorf("'boxkite down' stops the local server; 'boxkite context use' switches away from it",
					"the local context cannot be removed")
			}
			if err := conf.refuseUnattended(app, args); err != nil {
				return err
			}
			home, err := existingContext(name)
			if err != nil {
				return err
			}
			if err := conf.ask(app, fmt.Sprintf("Remove context %s and its API key?", name)); err != nil {
				return err
			}
			path := contextFile(home, name)
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove context %s: %w", name, err)
			}
			cur, err := readCurrentContext(home)
			wasCurrent := err == nil && cur == name
			if wasCurrent {
				if err := writeCurrentContext(home, ""); err != nil {
					return err
				}
			}
			fmt.Fprintf(app.IO.ErrOut, "removed context %s (%s)\n", name, path)
			if now, err := contextInUse(app, home); wasCurrent && err == nil && now != name {
				fmt.Fprintf(app.IO.ErrOut, "%s was the current context; commands now use %s ('boxkite context use NAME' picks another)\n", name, now)
			}
			return nil
		},
	}
	conf.register(cmd)
	return cmd
}

// completeContexts completes context names, each described by its URL.
func completeContexts(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	home, _, err := resolveHome()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	infos, err := listContexts(home, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]cobra.Completion, 0, len(infos))
	for _, c := range infos {
		out = append(out, cobra.CompletionWithDesc(c.Name, c.BaseURL))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// existingContext returns the boxkite home when it has a context name,
// else the error that says there is none.
func existingContext(name string) (string, error) {
	home, _, err := resolveHome()
	if err != nil {
		return "", err
	}
	if ok, err := contextExists(home, name); err != nil {
		return "", err
	} else if !ok {
		return "", contextNotFound(name)
	}
	return home, nil
}
