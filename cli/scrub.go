package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

func newScrubOutputCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "scrub-output [on|off]",
		Short: "Show or set whether command output is scrubbed of secrets",
		Long: `Command output the API returns (exec, background processes, the Python
interpreter, MCP tools) has secret-shaped strings, such as API keys, tokens,
passwords and private keys, replaced with placeholders like
[REDACTED_AWS_KEY]. That is on by default; "off" turns it off for the whole
account. It is a courtesy, not a boundary: it catches what a command prints
by accident. The audit log is scrubbed either way, and file reads and
downloads are never touched. Changing it takes an admin key or a login.`,
		Example:   "  boxkite scrub-output\n  boxkite scrub-output off",
		GroupID:   groupSettings,
		Args:      usageArgs(cobra.MaximumNArgs(1)),
		ValidArgs: []string{"on", "off"},
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			var acct *api.Account
			if len(args) == 0 {
				if acct, err = c.Account(cmd.Context()); err != nil {
					return fmt.Errorf("get account: %w", err)
				}
			} else {
				var on bool
				switch args[0] {
				case "on":
					on = true
				case "off":
				default:
					return usageErrorf(helpHint(cmd), "want on or off, got %q", args[0])
				}
				if acct, err = c.UpdateAccount(cmd.Context(), api.AccountUpdate{ScrubOutput: &on}); err != nil {
					return fmt.Errorf("set output scrubbing: %w", err)
				}
			}
			if asJSON {
				return out.write(app.IO, scrubSetting{ScrubOutput: acct.ScrubOutput})
			}
			fmt.Fprintln(app.IO.Out, onOff(acct.ScrubOutput))
			return nil
		},
	}
	out.register(cmd, scrubSetting{})
	return cmd
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// scrubSetting is what `scrub-output --json` prints.
type scrubSetting struct {
	ScrubOutput bool `json:"scrub_output"`
}
