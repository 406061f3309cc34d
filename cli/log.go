package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/spf13/cobra"
)

func newLogCmd(app *App) *cobra.Command {
	var (
		ref           string
		limit, offset int
		tail          int
		since         time.Duration
		out           outputFlags
	)
	cmd := &cobra.Command{
		Use:   "log [-s ID] [--tail N] [--since 10m] [--limit N --offset N]",
		Short: "Print the audit log of a sandbox",
		Long: `Print the audit log of a sandbox: every command, file operation, process
and terminal takeover, by whom and how it ended. File contents are never
logged. The entries form a hash chain (see --json).

By default it prints the newest 50 entries (--tail N for another number),
oldest of them first; --since prints those that started within that long
ago. --offset pages from the oldest instead, --limit entries at a time.`,
		Example: "  boxkite log\n  boxkite log --tail 200\n  boxkite log --since 10m\n  boxkite log -s build --limit 100 --offset 100\n  boxkite log --json | jq '.entries[].operation'",
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
			if offset < 0 || tail < 0 {
				return usageErrorf(helpHint(cmd), "--offset and --tail must not be negative")
			}
			paging := cmd.Flags().Changed("offset")
			if paging && (cmd.Flags().Changed("tail") || since > 0) {
				return usageErrorf(helpHint(cmd), "--offset pages from the oldest; it does not go with --tail or --since")
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
			page, err := readLog(ctx, c, sb.ID, logWindow{
				paging: paging, limit: limit, offset: offset,
				tail: tail, tailSet: cmd.Flags().Changed("tail"), since: since,
			})
			if err != nil {
				return fmt.Errorf("read the log of sandbox %s: %w", sb.ID, err)
			}
			if asJSON {
				if page.Entries == nil {
					page.Entries = []api.LogEntry{}
				}
				return out.write(app.IO, page)
			}
			return printLog(app.IO, page, sb, paging)
		},
	}
	sandboxFlag(cmd, app, &ref)
	cmd.Flags().IntVar(&tail, "tail", api.DefaultLogLimit, "print the newest N entries")
	cmd.Flags().Var(newDurationValue(&since, 0, time.Minute), "since", "print the entries that started within this long ago, e.g. 10m or 2h")
	cmd.Flags().IntVar(&limit, "limit", api.DefaultLogLimit, fmt.Sprintf("with --offset: entries per page (at most %d)", api.MaxLogLimit))
	cmd.Flags().IntVar(&offset, "offset", 0, "page from the oldest, skipping this many entries")
	out.register(cmd, api.LogPage{})
	pageable(cmd)
	return cmd
}

// logWindow is which entries of a log to read: a page from the oldest
// (paging), or the newest tail (or limit) entries, or those since ago.
type logWindow struct {
	paging        bool
	limit, offset int
	tail          int
	tailSet       bool
	since         time.Duration
}

// readLog reads the entries of sandbox id's log that w names.
func readLog(ctx context.Context, c *client.Client, id string, w logWindow) (*api.LogPage, error) {
	if w.paging {
		return c.Log(ctx, id, w.limit, w.offset)
	}
	n := w.limit
	if w.tailSet {
		n = w.tail
	}
	var from time.Time
	if w.since > 0 {
		from = time.Now().Add(-w.since)
	}
	return newestLog(ctx, c, id, n, w.tailSet || w.since == 0, from)
}

// printLog writes a page of the log as a table, with a note on stderr of
// where more entries are.
func printLog(ios IO, page *api.LogPage, sb api.Sandbox, paging bool) error {
	if len(page.Entries) == 0 {
		var note string
		switch {
		case page.Total > 0:
			note = fmt.Sprintf("no log entries here; sandbox %s has %d in all", sb.ID, page.Total)
		case sb.Status == api.StatusDestroyed:
			// Nothing can run in it any more: no exec to suggest.
			note = fmt.Sprintf("no log entries for sandbox %s; it was destroyed before anything ran in it", sb.ID)
		default:
			note = fmt.Sprintf("no log entries for sandbox %s; run a command with 'boxkite exec -s %s -- COMMAND'", sb.ID, sb.ID)
		}
		fmt.Fprintln(ios.ErrOut, note)
		return nil
	}
	if err := writeLogTable(ios.Out, page.Entries, ios.Color); err != nil {
		return err
	}
	switch end := page.Offset + len(page.Entries); {
	case paging && end < page.Total:
		fmt.Fprintf(ios.ErrOut, "entries %d-%d of %d; next: --offset %d\n", page.Offset+1, end, page.Total, end)
	case !paging && page.Offset > 0 && len(page.Entries) > 0:
		fmt.Fprintf(ios.ErrOut, "the newest %d of %d entries; earlier ones: --tail %d, or --offset 0 to page from the oldest\n",
			len(page.Entries), page.Total, min(page.Total, 2*len(page.Entries)))
	}
	return nil
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

// newestLog reads the end of a sandbox's log: the newest n entries (capped
// when capped is set) among those that started at or after from (zero:
// all), oldest first, in pages of api.MaxLogLimit. The server pages from
// the oldest, so it asks for the total first, and for from, looks the
// first such entry up by bisection on started_at; entries are in append
// order, which follows start times except among operations that
// overlapped, so the bisection is exact up to those and the entries it
// returns are filtered on the start time once more.
func newestLog(ctx context.Context, c *client.Client, id string, n int, capped bool, from time.Time) (*api.LogPage, error) {
	first, err := c.Log(ctx, id, 1, 0)
	if err != nil {
		return nil, err
	}
	total := first.Total
	lo := 0
	if !from.IsZero() {
		hi := total
		for lo < hi {
			mid := (lo + hi) / 2
			p, err := c.Log(ctx, id, 1, mid)
			if err != nil {
				return nil, err
			}
			if len(p.Entries) == 0 || !p.Entries[0].StartedAt.Before(from) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
	}
	start := lo
	if capped {
		start = max(lo, total-n)
	}
	page := &api.LogPage{Offset: start, Total: total, HeadSeq: first.HeadSeq, HeadHash: first.HeadHash}
	for off := start; off < total; off += api.MaxLogLimit {
		p, err := c.Log(ctx, id, api.MaxLogLimit, off)
		if err != nil {
			return nil, err
		}
		for _, e := range p.Entries {
			if from.IsZero() || !e.StartedAt.Before(from) {
				page.Entries = append(page.Entries, e)
			}
		}
		if len(p.Entries) == 0 {
			break
		}
	}
	page.Limit = len(page.Entries)
	return page, nil
}
