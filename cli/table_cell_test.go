package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestTableCellsEscaped: text a sandbox or another member of the account
// chose (a file name, a label, a command line) cannot drive the terminal
// of whoever lists it, nor break a table's rows: its control characters
// are printed escaped. Before, `boxkite files ls` of a file named with an
// OSC 52 sequence set the reader's clipboard.
func TestTableCellsEscaped(t *testing.T) {
	t.Parallel()
	const osc52 = "a\x1b]52;c;cHduZWQ=\x07b"
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tables := map[string]struct {
		write func(*strings.Builder) error
		rows  int
		want  string
	}{
		"files ls": {func(b *strings.Builder) error {
			return writeLsTable(b, []api.LsEntry{{Path: "/workspace/" + osc52}, {Path: "/workspace/line1\nline2\tx"}}, false)
		}, 2, `/workspace/line1\nline2\tx`},
		"session ls": {func(b *strings.Builder) error {
			return writeSandboxTable(b, []api.Sandbox{{ID: "3f2a", Label: "evil\x1b[31mRED\u009b", CreatedAt: now, ExpiresAt: now}}, now, false)
		}, 1, `evil\x1b[31mRED\u009b`},
		"session ls, bidi": {func(b *strings.Builder) error {
			return writeSandboxTable(b, []api.Sandbox{{ID: "3f2a", Label: "\u202egpj.exe\u2066x\u2069", CreatedAt: now, ExpiresAt: now}}, now, false)
		}, 1, `\u202egpj.exe\u2066x\u2069`},
		"images ls": {func(b *strings.Builder) error {
			return writeRows(b, false, "ID\tLABEL", []api.Image{{ID: "img_1", Label: osc52 + "\n\xff"}},
				func(im api.Image, _ time.Time) []string { return []string{im.ID, im.Label} }, now)
		}, 1, `a\x1b]52;c;cHduZWQ=\ab\n` + "\uFFFD"},
		"process ls": {func(b *strings.Builder) error {
			return writeProcessTable(b, []api.ProcessInfo{{ProcessID: "proc_1", Command: "printf '" + osc52 + "'", StartedAt: now}}, now, false)
		}, 1, `printf 'a\x1b]52;c;cHduZWQ=\ab'`},
	}
	for name, tc := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if strings.ContainsAny(out, "\x1b\x07\t\u009b\u202e\u2066\u2069") {
				t.Errorf("the table passes control characters through:\n%q", out)
			}
			if n := strings.Count(out, "\n"); n != tc.rows+1 {
				t.Errorf("the table has %d lines, want %d (a header and %d rows):\n%s", n, tc.rows+1, tc.rows, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("the table does not show %s:\n%s", tc.want, out)
			}
		})
	}
}

// TestSearchOutputEscaped: `files glob` and `files grep` on a terminal
// show a path's or a line's control characters escaped (tabs kept), so a
// file a sandbox named cannot drive the reader's terminal; piped, they
// print the bytes as they are, as find and grep do. Before, the escape
// sequence reached the terminal.
func TestSearchOutputEscaped(t *testing.T) {
	t.Parallel()
	const osc52 = "a\x1b]52;c;cHduZWQ=\x07b"
	globs := []api.GlobMatch{{Path: "/workspace/" + osc52}}
	greps := []api.GrepMatch{{Path: "/workspace/" + osc52, Line: 3, Text: "\tx := \"\x1b[2J\""}}
	var tty, raw strings.Builder
	writeGlobMatches(&tty, globs, true)
	writeGrepMatches(&tty, greps, true)
	writeGlobMatches(&raw, globs, false)
	writeGrepMatches(&raw, greps, false)
	want := `/workspace/a\x1b]52;c;cHduZWQ=\ab` + "\n" + `/workspace/a\x1b]52;c;cHduZWQ=\ab:3:` + "\tx := \"\\x1b[2J\"\n"
	if tty.String() != want {
		t.Errorf("on a terminal:\n%q\nwant\n%q", tty.String(), want)
	}
	if want := "/workspace/" + osc52 + "\n/workspace/" + osc52 + ":3:\tx := \"\x1b[2J\"\n"; raw.String() != want {
		t.Errorf("piped:\n%q\nwant\n%q", raw.String(), want)
	}
}
