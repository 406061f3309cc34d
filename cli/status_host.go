package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// addHostStatus fills st.Host from GET /v1/host: the host's disk against
// the free-space watermark, its other limits, whether the audit log can
// be written, and the active sandboxes' disks. A key that may not read it
// (a member key) or a server without it leaves it out.
func addHostStatus(ctx context.Context, c *client.Client, st *serverStatus) {
	if h, err := c.Host(ctx); err == nil {
		st.Host = h
	}
}

// writeHostStatus adds the host's lines to the status table.
func writeHostStatus(tw io.Writer, h *api.HostStatus) {
	if d := h.Disk; d != nil {
		line := fmt.Sprintf("%s free of %s on %s, watermark %s", humanBytes(d.FreeBytes), humanBytes(d.TotalBytes), d.Path, humanBytes(d.WatermarkBytes))
		if d.Refusing {
			line += " (below it: creates and uploads are refused)"
		}
		fmt.Fprintf(tw, "disk:\t%s\n", line)
	}
	for _, l := range h.Limits {
		used, limit, at := fmt.Sprint(l.Used), fmt.Sprint(l.Limit), fmt.Sprint(l.RefuseAt)
		if l.Unit == "bytes" {
			used, limit, at = humanBytes(l.Used), humanBytes(l.Limit), humanBytes(l.RefuseAt)
		}
		line := fmt.Sprintf("%s of %s in use, creates refused past %s", used, limit, at)
		if l.Refusing {
			line += " (refusing now)"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", strings.ReplaceAll(l.Resource, "_", " "), line)
	}
	audit := "writable"
	if !h.Audit.Writable {
		audit = "not writable: " + h.Audit.Reason + "; audited operations are refused"
	}
	fmt.Fprintf(tw, "audit log:\t%s\n", audit)
}

// writeSandboxDisks lists the active sandboxes' disk use under the table.
func writeSandboxDisks(w io.Writer, h *api.HostStatus) error {
	if len(h.Sandboxes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "SANDBOX\tLABEL\tDISK")
	for _, sb := range h.Sandboxes {
		disk := humanBytes(sb.UsedBytes) + " of " + humanBytes(sb.QuotaBytes)
		switch {
		case sb.FrozenReason == api.FrozenClonePool:
			disk += " (frozen: the clone pool is out of space)"
		case sb.Frozen:
			disk += " (frozen: the host is out of disk)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sb.ID, cell(orDash(sb.Label)), disk)
	}
	return tw.Flush()
}
