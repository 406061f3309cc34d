package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
)

func newSnapshotsCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "snapshots",
		Aliases: []string{"snapshot"},
		Short:   "List, inspect and remove snapshots of sandboxes' filesystems",
		Long: `Snapshots are copies of a sandbox's filesystem (its workspace and outputs),
taken with 'boxkite session snapshot' and made into new sandboxes with
'boxkite session restore'. They outlive the sandbox they were taken of; an
account keeps at most 10 by default.`,
		GroupID: groupSandboxes,
	})
	cmd.AddCommand(newSnapshotsLsCmd(app),
		withExample(newDetailCmd(app, "snapshot", "Show one snapshot"+refsNote, byRef(snapshotID, (*client.Client).Snapshot), writeSnapshotDetail),
			"  boxkite snapshots get before-upgrade\n  boxkite snapshots get before-upgrade --jq .status"),
		withExample(newRmCmd(app, "snapshot", "Remove a snapshot (sandboxes restored from it keep their files)", true, snapshotID, (*client.Client).DeleteSnapshot),
			"  boxkite snapshots rm before-upgrade\n  boxkite snapshots rm before-upgrade --yes"))
	return cmd
}

// writeSnapshotDetail is `snapshots get`'s text view of sn, as `session
// get` shows a sandbox.
func writeSnapshotDetail(w io.Writer, sn *api.Snapshot, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", sn.ID)
	tw.Detail("status", sn.Status)
	tw.Detail("label", sn.Label)
	tw.Detail("sandbox", sn.SessionID)
	tw.Detail("size", humanBytes(sn.SizeBytes))
	tw.Detail("method", sn.Method)
	tw.Detail("created", stamp(sn.CreatedAt, now, " ago"))
	if sn.DeletedAt != nil {
		tw.Detail("deleted", stamp(*sn.DeletedAt, now, " ago"))
	}
	return tw.Flush()
}

func newSnapshotsLsCmd(app *App) *cobra.Command {
	var sandbox string
	cmd := newListCmd(app, listing[api.Snapshot]{
		short: "List the account's snapshots, newest first", noun: "snapshots",
		example: "  boxkite snapshots ls\n  boxkite snapshots ls -s build --json id,label,size_bytes",
		header:  "ID\tSANDBOX\tLABEL\tSTATUS\tSIZE\tAGE",
		empty:   "no snapshots; take one with 'boxkite session snapshot ID'",
		fetch: func(c *client.Client, ctx context.Context) ([]api.Snapshot, error) {
			if sandbox == "" {
				return c.Snapshots(ctx, "")
			}
			sb, err := resolveSandbox(ctx, c, sandbox, false)
			if err != nil {
				return nil, err
			}
			return c.Snapshots(ctx, sb.ID)
		},
		row: func(sn api.Snapshot, now time.Time) []string {
			return []string{sn.ID, sn.SessionID, sn.Label, sn.Status, humanBytes(sn.SizeBytes), tui.ShortDuration(now.Sub(sn.CreatedAt))}
		},
	})
	cmd.Flags().StringVarP(&sandbox, "sandbox", "s", "", "only the snapshots of this `sandbox` (id, prefix or label)")
	return cmd
}

func newSessionSnapshotCmd(app *App) *cobra.Command {
	var (
		label string
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:   "snapshot ID [--label LABEL]",
		Short: "Snapshot a sandbox's filesystem and print the snapshot's id",
		Long: `Snapshot a sandbox's filesystem (workspace and outputs). The copy is
crash-consistent: the sandbox's processes are frozen for the instant it
takes. 'boxkite session restore SNAPSHOT' makes a new sandbox from it.`,
		Example:           "  snap=$(boxkite session snapshot 3f2a --label before-upgrade)\n  boxkite session restore $snap",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabel("--label", label); err != nil {
				return err
			}
			asJSON, c, sb, err := sandboxArg(cmd, app, &out, args[0], false)
			if err != nil {
				return err
			}
			sn, err := c.CreateSnapshot(cmd.Context(), sb.ID, label)
			if err != nil {
				return fmt.Errorf("snapshot sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				return out.write(app.IO, sn)
			}
			fmt.Fprintln(app.IO.Out, sn.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&label, "label", "", "a `label` for the snapshot")
	out.register(cmd, api.Snapshot{})
	return cmd
}

func newSessionRestoreCmd(app *App) *cobra.Command {
	var (
		label string
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:     "restore SNAPSHOT [--label LABEL]",
		Short:   "Create a new sandbox from a snapshot and print its id",
		Example: "  boxkite session restore 7c1e --label retry",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLabel("--label", label); err != nil {
				return err
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			id, err := snapshotID(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			sb, err := c.RestoreSnapshot(cmd.Context(), id, label)
			if err != nil {
				return listHint(cmd, fmt.Errorf("restore snapshot %s: %w", args[0], err))
			}
			if asJSON {
				return out.write(app.IO, sb)
			}
			fmt.Fprintln(app.IO.Out, sb.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&label, "label", "", "a `label` for the new sandbox")
	out.register(cmd, api.Sandbox{})
	return cmd
}

func newSessionForkCmd(app *App) *cobra.Command {
	var (
		count int
		out   outputFlags
	)
	cmd := &cobra.Command{
		Use:   "fork ID [--count N]",
		Short: "Fork a sandbox N ways and print the children's ids",
		Long: `Fork a sandbox: each child starts from its filesystem as it is now
(copy-on-write where the server can), with a fresh set of processes. Writes
in one child are seen by no other, nor by the parent.`,
		Example:           "  boxkite session fork 3f2a --count 8",
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeSandboxes(app, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The API reads a count of 0 as its default, 1: checked here,
			// --count 0 would make a child the user did not ask for.
			if count < 1 || count > maxCreateCount {
				return usageErrorf(helpHint(cmd), "--count must be between 1 and %d, got %d", maxCreateCount, count)
			}
			asJSON, c, sb, err := sandboxArg(cmd, app, &out, args[0], false)
			if err != nil {
				return err
			}
			children, err := c.ForkSandbox(cmd.Context(), sb.ID, count)
			if err != nil {
				return fmt.Errorf("fork sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				return out.write(app.IO, children)
			}
			for _, ch := range children {
				fmt.Fprintln(app.IO.Out, ch.ID)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&count, "count", 1, "how many children")
	out.register(cmd, []api.Sandbox{})
	return cmd
}
