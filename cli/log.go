package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newLogCmd(app *App) *cobra.Command {
	var (
		ref           string
		limit, offset int
		out           outputFlags
	)
	cmd := &cobra.Command{
		Use:   "log [-s ID] [--limit N] [--offset N]",
		Short: "Print the audit log of a sandbox",
		Long: `Print the audit log of a sandbox, oldest first: every command, file
operation, process and terminal takeover, by whom and how it ended. File
contents are never logged. The entries form a hash chain (see --json).`,
		Example: "  boxkite log\n  boxkite log -s build --limit 100 --offset 100\n  boxkite log --json | jq '.entries[].operation'",
		GroupID: groupSandboxes,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.wantJSON(cmd)
			if err != nil {
				return err
			}
			if limit < 1 || limit > api.MaxLogLimit {
				return usageErrorf(helpHint(cmd), "--limit must be between 1 and %d", api.MaxLogLimit)
			}
			if offset < 0 {
				return usageErrorf(helpHint(cmd), "--offset must not be negative")
			}
			ctx := cmd.Context()
			c, err := app.Client()
			if err != nil {
				return err
			}
			// A destroyed sandbox's log is still there to read.
			var sb api.Sandbox
			if ref != "" {
				sb, err = resolveSandbox(ctx, c, ref, false)
			} else {
				sb, err = pickSandbox(ctx, c, "", false, app.IO.ErrOut)
			}
			if err != nil {
				return err
			}
			page, err := c.Log(ctx, sb.ID, limit, offset)
			if err != nil {
				return fmt.Errorf("read the log of sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				if page.Entries == nil {
					page.Entries = []api.LogEntry{}
				}
				return writeJSON(app.IO.Out, page)
			}
			if err := writeLogTable(app.IO.Out, page.Entries, app.IO.Color); err != nil {
				return err
			}
			if end := page.Offset + len(page.Entries); end < page.Total {
				fmt.Fprintf(app.IO.ErrOut, "entries %d-%d of %d; next: --offset %d\n", page.Offset+1, end, page.Total, end)
			}
			return nil
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().IntVar(&limit, "limit", api.DefaultLogLimit, fmt.Sprintf("entries to print (at most %d)", api.MaxLogLimit))
	cmd.Flags().IntVar(&offset, "offset", 0, "entries to skip from the oldest")
	out.register(cmd)
	return cmd
}

// maxDetailColumn is how much of an entry's detail the log table shows.
const maxDetailColumn = 80

func writeLogTable(w io.Writer, entries []api.LogEntry, color bool) error {
	if len(entries) == 0 {
		return nil
	}
	tw := newTable(w)
	tw.Header(color, "TIME\tSOURCE\tOPERATION\tEXIT\tDURATION\tDETAIL")
	for _, e := range entries {
		exit := "-"
		if e.ExitCode != nil {
			exit = fmt.Sprint(*e.ExitCode)
		}
		detail := truncate(compactJSON(e.Detail), maxDetailColumn)
		dur := (time.Duration(e.DurationMS) * time.Millisecond).String()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n",
			e.StartedAt.Local().Format("2006-01-02 15:04:05"), e.Source, e.Operation, exit, dur, detail)
	}
	return tw.Flush()
}

// compactJSON prints a detail object on one line; tabs and newlines inside
// strings are already escaped by JSON, so the table stays aligned.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	if b.String() == "null" {
		return "{}"
	}
	return b.String()
}
