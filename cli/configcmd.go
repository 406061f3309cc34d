package cli

import (
	"bufio"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

func newConfigCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "config",
		Short:   "Show and change the CLI's configuration",
		GroupID: groupSettings,
	})
	cmd.AddCommand(newConfigShowCmd(app), newConfigSetURLCmd(app), newConfigSetKeyCmd(app))
	return cmd
}

// setting is one row of `config show`.
type setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"` // flag --url, env BOXKITE_URL, file PATH, default, derived (context: chosen by flag, env or file, else derived)
}

// settings lists every value of cfg with its source; the API key is masked.
func settings(cfg *Config) []setting {
	mode := "hosted"
	if cfg.Local {
		mode = "local"
	}
	return []setting{
		{keyContext, cfg.Context, cfg.Sources[keyContext]},
		{keyBaseURL, cfg.BaseURL, cfg.Sources[keyBaseURL]},
		{keyAPIKey, maskKey(cfg.APIKey), cfg.Sources[keyAPIKey]},
		{keyHome, cfg.Home, cfg.Sources[keyHome]},
		{"mode", mode, "derived"},
	}
}

func newConfigShowCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use: "show",
		Example: `  boxkite config show
  boxkite config show --json --jq '.[] | select(.key == "base_url") | .source'`,
		Short: "Print every setting with where it comes from (API keys masked)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			rows := settings(cfg)
			if asJSON {
				return out.write(app.IO, rows)
			}
			tw := newTable(app.IO.Out)
			tw.Header(app.IO.Color, "KEY\tVALUE\tSOURCE")
			for _, r := range rows {
				v := r.Value
				if v == "" {
					v = "(none)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Key, v, r.Source)
			}
			return tw.Flush()
		},
	}
	out.register(cmd, setting{})
	return cmd
}

func newConfigSetURLCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:     "set-url URL",
		Short:   "Set the hosted server's URL in config.toml (or the chosen context's file)",
		Example: "  boxkite config set-url https://boxkite.example.com",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			u := strings.TrimRight(args[0], "/")
			if err := checkRemoteURL(u, args[0]); err != nil {
				return err
			}
			return setConfigValue(app, keyBaseURL, func(fc *fileConfig) { fc.BaseURL = u })
		},
	}
}

func newConfigSetKeyCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "set-key [KEY]",
		Short: "Set the hosted server's API key in config.toml (reads stdin without KEY)",
		Long: `Set the API key for the hosted server in config.toml, or in the file of the
context chosen with --context or 'boxkite context use'. Without KEY the key
is read from the first line of stdin, which keeps it out of shell history.
A key of another shape than the server issues (bxk_live_ and 43 more
characters) is refused, and the file keeps the key it had.`,
		Example: "  boxkite config set-key bxk_live_…\n  pass show boxkite | boxkite config set-key",
		Args:    usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := ""
			if len(args) == 1 {
				key = args[0]
			} else {
				line, ok := readKeyLine(app)
				if !ok {
					return usageErrorf(helpHint(cmd), "no key given: pass KEY or pipe it on stdin")
				}
				key = line
			}
			key, err := checkAPIKey(key)
			if err != nil {
				return err
			}
			return setConfigValue(app, keyAPIKey, func(fc *fileConfig) { fc.APIKey = key })
		},
	}
}

func setConfigValue(app *App, key string, change func(*fileConfig)) error {
	// Not app.Config(): that also validates the files and the environment,
	// which may be exactly what this command is fixing.
	path, name, err := credentialsFile(app)
	if err != nil {
		return err
	}
	if err := updateFileConfig(path, change); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	fmt.Fprintf(app.IO.ErrOut, "%s saved in %s\n", key, path)
	fc, err := readFileConfig(path)
	if err != nil {
		return err
	}
	if fc.BaseURL == "" || fc.APIKey == "" {
		missing := "set-key KEY"
		if fc.BaseURL == "" {
			missing = "set-url URL"
		}
		if name == contextHosted {
			fmt.Fprintf(app.IO.ErrOut, "config.toml is used once it has both a URL and a key: run 'boxkite config %s'\n", missing)
		} else {
			fmt.Fprintf(app.IO.ErrOut, "context %s works once it has both a URL and a key: run 'boxkite --context %s config %s'\n", name, name, missing)
		}
	}
	noteContextUnused(app, name)
	return nil
}

// noteContextUnused says so when the context just changed is not the one
// commands use: login or set-url on hosted while local was chosen.
func noteContextUnused(app *App, name string) {
	home, _, err := resolveHome()
	if err != nil {
		return
	}
	if chosen, _, err := chosenContext(home, app.flags); err == nil && chosen != "" && chosen != name {
		fmt.Fprintf(app.IO.ErrOut, "note: commands use context %s; run 'boxkite context use %s' to use this one\n", chosen, name)
	}
}

// readKeyLine reads an API key from the first line of stdin, prompting for
// it on a terminal; false when stdin had nothing.
func readKeyLine(app *App) (string, bool) {
	if app.IO.InTTY {
		fmt.Fprint(app.IO.ErrOut, "API key: ")
	}
	line, err := bufio.NewReader(app.IO.In).ReadString('\n')
	return line, err == nil || line != ""
}

// checkAPIKey trims a key given by hand and refuses one of another shape
// than the server mints (api.ValidAPIKey), so a key cut short by a copy,
// or something else pasted, is never stored. The message never shows the
// key: it is a secret, and this is a terminal.
func checkAPIKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if api.ValidAPIKey(key) {
		return key, nil
	}
	const hint = "copy the whole key 'boxkite keys create' printed (bxk_live_ and 43 more characters); 'boxkite keys create' makes another"
	var why string
	switch rest, ok := strings.CutPrefix(key, api.APIKeyPrefix); {
	case key == "":
		why = "it is empty"
	case !ok:
		why = "it does not start with " + api.APIKeyPrefix
	case utf8.RuneCountInString(rest) != 43:
		why = fmt.Sprintf("%d characters follow %s, not 43", utf8.RuneCountInString(rest), api.APIKeyPrefix)
	default:
		why = "it holds characters other than letters, digits, '-' and '_'"
	}
	return "", usageErrorf(hint, "invalid API key: %s", why)
}
