package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client/api"
)

func newSessionPauseCmd(app *App) *cobra.Command {
	var (
		mode string
		out  outputFlags
	)
	cmd := &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a sandbox; its lifetime stops counting until it is resumed",
		Long: `Pause a sandbox. It keeps its id, endpoints and files; while paused its
lifetime and this month's hours do not count, it holds no concurrency slot,
and every call to it answers 409 sandbox_paused until 'boxkite session resume'.

Modes:
  freeze       stop every process at once, keeping memory; resume continues
               exactly where it stopped (the default)
  filesystem   end every process and release its memory, keeping the files;
               resume starts the sandbox again, and the background processes
               started with restart
  checkpoint   keep memory on disk with CRIU, where 'criu check' passes
               ('boxkite doctor' on the server's host says whether it does)`,
		Example:           "  boxkite session pause 3f2a\n  boxkite session pause 3f2a --mode filesystem",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch mode {
			case api.PauseFreeze, api.PauseFilesystem, api.PauseCheckpoint:
			default:
				return usageErrorf(helpHint(cmd), "unknown --mode %q (want freeze, filesystem or checkpoint)", mode)
			}
			asJSON, c, sb, err := sandboxArg(cmd, app, &out, args[0], false)
			if err != nil {
				return err
			}
			got, err := c.PauseSandbox(cmd.Context(), sb.ID, mode)
			if err != nil {
				return fmt.Errorf("pause sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				return out.write(app.IO, got)
			}
			fmt.Fprintf(app.IO.Out, "%s\tpaused (%s)\n", got.ID, got.PausedWith)
			return nil
		},
	}
	cmd.Flags().StringVar(&mode, "mode", api.PauseFreeze, "how to pause: freeze, filesystem or checkpoint")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{api.PauseFreeze, api.PauseFilesystem, api.PauseCheckpoint}, cobra.ShellCompDirectiveNoFileComp))
	out.register(cmd, api.Sandbox{})
	return cmd
}

func newSessionResumeCmd(app *App) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a paused sandbox: same id and endpoints",
		Long: `Resume a paused sandbox. Its expiry moves on by the time it was paused.
After a filesystem pause, each background process that ran at the pause is
listed: restarted (it was started with restart) or ended.`,
		Example:           "  boxkite session resume 3f2a",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, c, sb, err := sandboxArg(cmd, app, &out, args[0], false)
			if err != nil {
				return err
			}
			got, err := c.ResumeSandbox(cmd.Context(), sb.ID)
			if err != nil {
				return fmt.Errorf("resume sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				return out.write(app.IO, got)
			}
			fmt.Fprintf(app.IO.Out, "%s\t%s\n", got.ID, got.Status)
			for _, p := range got.Processes {
				line := fmt.Sprintf("  process %s\t%s", p.ProcessID, p.Status)
				if p.NewProcessID != "" {
					line += " as " + p.NewProcessID
				}
				if p.Error != "" {
					line += ": " + p.Error
				}
				fmt.Fprintf(app.IO.Out, "%s\t%s\n", line, p.Command)
			}
			return nil
		},
	}
	out.register(cmd, api.ResumeResult{})
	return cmd
}
