package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tui"
	"github.com/spf13/cobra"
)

func newVolumesCmd(app *App) *cobra.Command {
	cmd := groupCmd(&cobra.Command{
		Use:     "volumes",
		Aliases: []string{"volume"},
		Short:   "Create, list and remove persistent volumes",
		Long: `Volumes are storage that outlives sandboxes. Mount one below /workspace
when creating a sandbox (boxkite session create --volume ID=/workspace/data);
several sandboxes may mount it, and a mounted volume cannot be removed.
Commands take a volume's id, a unique prefix of it, or its label.`,
		GroupID: groupSandboxes,
	})
	ids := completeVolumes(app, "")
	cmd.AddCommand(newVolumesCreateCmd(app), newVolumesLsCmd(app),
		withArgs(withExample(newDetailCmd(app, "volume", "Show one volume"+refsNote, byRef(volumeID, (*client.Client).GetVolume), writeVolumeDetail),
			"  boxkite volumes get data\n  boxkite volumes get data --jq .size_gb"), ids),
		withArgs(withExample(newRmCmd(app, "volume", "Remove a volume and its data (refused while a sandbox mounts it)", false, volumeID, (*client.Client).DeleteVolume),
			"  boxkite volumes rm data\n  boxkite volumes rm data --yes"), ids))
	return cmd
}

// writeVolumeDetail is `volumes get`'s text view of v.
func writeVolumeDetail(w io.Writer, v *api.Volume, now time.Time) error {
	tw := newTable(w)
	tw.Detail("id", v.ID)
	tw.Detail("status", v.Status)
	tw.Detail("label", v.Label)
	tw.Detail("size", fmt.Sprintf("%g GiB", v.SizeGB))
	tw.Detail("created", stamp(v.CreatedAt, now, " ago"))
	return tw.Flush()
}

func newVolumesCreateCmd(app *App) *cobra.Command {
	var (
		req api.CreateVolumeRequest
		out outputFlags
	)
	cmd := &cobra.Command{
		Use:     "create [--size-gb N] [--label LABEL]",
		Short:   "Create a volume and print its id",
		Example: "  vol=$(boxkite volumes create --size-gb 2 --label data)\n  boxkite session create --volume $vol=/workspace/data",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.SizeGB <= 0 {
				// 0 would reach the server as no size at all, and make 1 GiB.
				return usageErrorf("give a size such as --size-gb 1, or omit it for 1 GiB", "--size-gb must be more than 0, got %g", req.SizeGB)
			}
			if err := checkLabel("--label", req.Label); err != nil {
				return err
			}
			asJSON, c, err := jsonClient(cmd, app, &out)
			if err != nil {
				return err
			}
			v, err := c.CreateVolume(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("create volume: %w", err)
			}
			if asJSON {
				return out.write(app.IO, v)
			}
			fmt.Fprintln(app.IO.Out, v.ID)
			return nil
		},
	}
	cmd.Flags().Float64Var(&req.SizeGB, "size-gb", 1, "size limit in `GiB`")
	cmd.Flags().StringVar(&req.Label, "label", "", "a `label` for the volume")
	out.register(cmd, api.Volume{})
	return cmd
}

func newVolumesLsCmd(app *App) *cobra.Command {
	return newListCmd(app, listing[api.Volume]{
		example: "  boxkite volumes ls\n  boxkite volumes ls --json id,label,size_gb",
		short:   "List the account's volumes", noun: "volumes",
		header: "ID\tLABEL\tSIZE\tSTATUS\tAGE",
		empty:  "no volumes; create one with 'boxkite volumes create --label NAME'",
		fetch:  (*client.Client).ListVolumes,
		row: func(v api.Volume, now time.Time) []string {
			return []string{v.ID, v.Label, fmt.Sprintf("%g GiB", v.SizeGB), v.Status, tui.ShortDuration(now.Sub(v.CreatedAt))}
		},
	})
}
