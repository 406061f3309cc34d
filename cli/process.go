package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
	"github.com/spf13/cobra"
)

func newPsCmd(app *App) *cobra.Command {
	var (
		ref string
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:     "ps",
		Aliases: []string{"processes"},
		Short:   "List the background processes of a sandbox",
		Long:    "List the background processes of a sandbox (started with 'boxkite exec -b'), running and ended.",
		Example: `  boxkite ps -s build
  boxkite ps --jq '.processes[] | select(.status == "running") | .process_id'`,
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, c, sb, err := jsonTarget(cmd, app, &out, ref)
			if err != nil {
				return err
			}
			res, err := c.Processes(cmd.Context(), sb.ID)
			if err != nil {
				return fmt.Errorf("list processes of sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				if res.Processes == nil {
					res.Processes = []api.ProcessInfo{}
				}
				return out.write(app.IO, res)
			}
			if len(res.Processes) == 0 {
				fmt.Fprintf(app.IO.ErrOut, "no processes in sandbox %s; start one with 'boxkite exec -s %s -b -- COMMAND'\n", sb.ID, sb.ID)
				return nil
			}
			return writeProcessTable(app.IO.Out, res.Processes, time.Now(), app.IO.Color)
		},
	}
	sandboxFlag(cmd, app, &ref)
	out.register(cmd, api.ProcessList{})
	pageable(cmd)
	return cmd
}

// maxCommandColumn is how much of a command the process table shows.
const maxCommandColumn = 60

func writeProcessTable(w io.Writer, ps []api.ProcessInfo, now time.Time, color bool) error {
	tw := newTable(w)
	tw.Header(color, "ID\tSTATUS\tEXIT\tAGE\tCOMMAND")
	for _, p := range ps {
		exit := "-"
		if p.ExitCode != nil {
			exit = fmt.Sprint(*p.ExitCode)
		}
		command := truncate(cell(strings.Join(strings.Fields(p.Command), " ")), maxCommandColumn)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ProcessID, p.Status, exit, tui.Age(p.StartedAt, now), command)
	}
	return tw.Flush()
}

// processIDPattern is a whole process id as the sandbox hands them out.
var processIDPattern = regexp.MustCompile(`^proc_[0-9a-f]{32}$`)

// resolveProcess turns a process reference into its id: a whole id as it
// is, else a unique prefix of one, with or without "proc_".
func resolveProcess(ctx context.Context, c *client.Client, id, ref string) (string, error) {
	if ref == "" { // a prefix of every id: 'kill ""' used to stop the only process
		return "", usageErrorf("name a process by its id or a unique prefix of it ('boxkite ps -s "+id+"' lists them)", "the process to use is empty")
	}
	if processIDPattern.MatchString(ref) {
		return ref, nil
	}
	res, err := c.Processes(ctx, id)
	if err != nil {
		return "", fmt.Errorf("list processes: %w", err)
	}
	var found []string
	for _, p := range res.Processes {
		if p.ProcessID == ref {
			return ref, nil
		}
		if strings.HasPrefix(p.ProcessID, ref) || strings.HasPrefix(strings.TrimPrefix(p.ProcessID, "proc_"), ref) {
			found = append(found, p.ProcessID)
		}
	}
	switch len(found) {
	case 0:
		return "", &notFoundError{
			err:  fmt.Errorf("process %s not found in sandbox %s", ref, id),
			hint: "list processes with 'boxkite ps -s " + id + "'",
		}
	case 1:
		return found[0], nil
	}
	return "", usageErrorf("use more of the id", "%q matches %d processes: %s", ref, len(found), strings.Join(found, ", "))
}

func newKillCmd(app *App) *cobra.Command {
	var (
		ref string
		all bool
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:   "kill PROCESS... | --all",
		Short: "Stop background processes of a sandbox",
		Long: `Stop background processes (SIGTERM, then SIGKILL after a grace period). A
unique prefix of a process id is enough; --all stops every running one.`,
		Example: "  boxkite kill proc_3f2a\n  boxkite kill --all",
		GroupID: groupSandboxes,
		Args:    idsOrAll(&all, "process ids", "give the processes to stop, or --all"),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, sb, err := target(ctx, app, ref, false)
			if err != nil {
				return err
			}
			if all {
				res, err := c.KillAllProcesses(ctx, sb.ID)
				if err != nil {
					return fmt.Errorf("stop processes of sandbox %s: %w", sb.ID, err)
				}
				if asJSON {
					return out.write(app.IO, res)
				}
				fmt.Fprintf(app.IO.ErrOut, "stopped %d %s\n", res.Killed, plural(res.Killed, "process"))
				return nil
			}
			return killProcesses(ctx, app, c, sb.ID, args, jsonOut(asJSON, &out))
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().BoolVarP(&all, "all", "a", false, "stop every running process")
	out.register(cmd, api.ProcessStopResult{})
	return cmd
}

func killProcesses(ctx context.Context, app *App, c *client.Client, id string, refs []string, out *outputFlags) error {
	var results []api.ProcessStopResult
	for _, r := range refs {
		pid, err := resolveProcess(ctx, c, id, r)
		if err != nil {
			return err
		}
		res, err := c.StopProcess(ctx, id, pid)
		if err != nil {
			return fmt.Errorf("stop process %s: %w", pid, err)
		}
		results = append(results, *res)
		if out == nil {
			exit := ""
			if res.ExitCode != nil {
				exit = fmt.Sprintf(", exit code %d", *res.ExitCode)
			}
			fmt.Fprintf(app.IO.ErrOut, "%s %s%s\n", res.Status, pid, exit)
		}
	}
	if out != nil {
		if len(results) == 1 {
			return out.write(app.IO, results[0])
		}
		return out.write(app.IO, results)
	}
	return nil
}

func newLogsCmd(app *App) *cobra.Command {
	var (
		ref    string
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs PROCESS",
		Short: "Print the output of a background process",
		Long: `Print the output of a background process (stdout and stderr together, as
kept by the sandbox: the newest output of a chatty process only). With -f,
keep printing as it comes until the process ends.`,
		Example: "  boxkite logs proc_3f2a\n  boxkite logs -f proc_3f2a",
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, sb, err := target(ctx, app, ref, false)
			if err != nil {
				return err
			}
			pid, err := resolveProcess(ctx, c, sb.ID, args[0])
			if err != nil {
				return err
			}
			if follow {
				return followProcess(ctx, app, c, sb.ID, pid)
			}
			res, err := c.ProcessOutput(ctx, sb.ID, pid, 0)
			if err != nil {
				return fmt.Errorf("read output of %s: %w", pid, err)
			}
			if res.Truncated {
				fmt.Fprintln(app.IO.ErrOut, "(earlier output was dropped; this is the newest the sandbox kept)")
			}
			_, err = io.WriteString(app.IO.Out, res.StdoutChunk)
			return err
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing output until the process ends")
	return cmd
}

func followProcess(ctx context.Context, app *App, c *client.Client, id, pid string) error {
	first := true
	exit, err := c.StreamProcess(ctx, id, pid, 0, func(ev api.ProcessEvent) error {
		if ev.Truncated && first {
			fmt.Fprintln(app.IO.ErrOut, "(earlier output was dropped; this is the newest the sandbox kept)")
		}
		first = false
		_, err := io.WriteString(app.IO.Out, ev.StdoutChunk)
		return err
	})
	if err != nil {
		return followEnded(ctx, c, id, pid, err)
	}
	if app.IO.ErrTTY {
		code := ""
		if exit.ExitCode != nil {
			code = fmt.Sprintf(" with exit code %d", *exit.ExitCode)
		}
		fmt.Fprintf(app.IO.ErrOut, "process %s %s%s\n", pid, exit.Status, code)
	}
	return nil
}

// followEnded is the error of a follow whose stream ended without the
// process's exit: a pause of the sandbox ends it so (the server cuts the
// calls in flight to a paused sandbox), which it says, with how to go on,
// rather than the cut stream's "unexpected EOF".
func followEnded(ctx context.Context, c *client.Client, id, pid string, err error) error {
	if _, answered := errors.AsType[*api.Error](err); answered || ctx.Err() != nil {
		return fmt.Errorf("follow output of %s: %w", pid, err)
	}
	if sb, serr := c.Sandbox(ctx, id); serr == nil && sb.Status == api.StatusPaused {
		return &hintError{
			err:  fmt.Errorf("follow output of %s: sandbox %s was paused (%s); its output ends here", pid, id, sb.PausedWith),
			hint: fmt.Sprintf("resume it with 'boxkite session resume %s', then 'boxkite logs -f %s -s %s'", id, pid, id),
		}
	}
	return fmt.Errorf("follow output of %s: %w", pid, err)
}
