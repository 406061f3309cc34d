package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// table lays out tab-separated rows in aligned columns; call Flush when
// done. Cells are measured in terminal cells, escape codes and wide
// characters included, so colour never shifts a column. On a terminal the
// table fits its width: the widest columns but the first (the id, which
// users copy) are cut with "…". Written anywhere else nothing is cut, so
// a pipe or a file always gets every byte.
type table struct {
	out        io.Writer
	buf        bytes.Buffer
	boldHeader bool
	maxWidth   int // 0: no limit
}

// columnGap is the space between two columns.
const columnGap = 2

// minCutWidth is the narrowest a cut column becomes: "ab…" still says
// something; narrower says nothing.
const minCutWidth = 4

// newTable returns a table writing to w, as wide as w's terminal if it is one.
func newTable(w io.Writer) *table {
	return &table{out: w, maxWidth: terminalWidth(w)}
}

// Write buffers rows: cells end with a tab, rows with a newline.
func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Header writes the header row (tab-separated), bold when color is set.
func (t *table) Header(color bool, cols string) {
	t.boldHeader = color
	fmt.Fprintln(t, cols)
}

// Detail writes a "key: value" row of one item's text view (`session
// get`, every noun's `get`); an empty value writes nothing. The value is
// the server's data (labels, URLs, descriptions), made safe as a cell.
func (t *table) Detail(key, value string) {
	if value != "" {
		fmt.Fprintf(t, "%s:\t%s\n", key, cell(value))
	}
}

// Flush lays out what was written and writes it out.
func (t *table) Flush() error {
	text := strings.TrimSuffix(t.buf.String(), "\n")
	t.buf.Reset()
	if text == "" {
		return nil
	}
	var rows [][]string
	for line := range strings.SplitSeq(text, "\n") {
		rows = append(rows, strings.Split(line, "\t"))
	}
	widths := columnWidths(rows)
	if t.maxWidth > 0 {
		fitWidths(widths, t.maxWidth)
	}
	var b strings.Builder
	for i, row := range rows {
		line := layoutRow(row, widths)
		if i == 0 && t.boldHeader {
			line = "\x1b[1m" + line + "\x1b[0m"
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	t.boldHeader = false
	_, err := io.WriteString(t.out, b.String())
	return err
}

// columnWidths is the display width of each column's widest cell.
func columnWidths(rows [][]string) []int {
	var widths []int
	for _, row := range rows {
		for j, cell := range row {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], ansi.StringWidth(cell))
		}
	}
	return widths
}

// fitWidths narrows widths so the row fits in limit cells: the columns
// after the first share what the narrow ones leave, the widest cut first.
func fitWidths(widths []int, limit int) {
	total := func() int {
		n := columnGap * (len(widths) - 1)
		for _, w := range widths {
			n += w
		}
		return n
	}
	for total() > limit {
		widest := 0
		for j := 1; j < len(widths); j++ {
			if widest == 0 || widths[j] > widths[widest] {
				widest = j
			}
		}
		if widest == 0 || widths[widest] <= minCutWidth {
			return // cannot fit; the terminal wraps
		}
		second := 0
		for j := 1; j < len(widths); j++ {
			if j != widest {
				second = max(second, widths[j])
			}
		}
		// Cut the widest down to the next widest, or just enough.
		cut := min(widths[widest]-max(second, minCutWidth), total()-limit)
		widths[widest] -= max(cut, 1)
	}
}

// layoutRow pads every cell but the last to its column's width, cutting
// cells wider than that.
func layoutRow(row []string, widths []int) string {
	var b strings.Builder
	for j, cell := range row {
		if ansi.StringWidth(cell) > widths[j] {
			cell = ansi.Truncate(cell, widths[j], "…")
		}
		b.WriteString(cell)
		if j < len(row)-1 {
			b.WriteString(strings.Repeat(" ", widths[j]-ansi.StringWidth(cell)+columnGap))
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// cell makes text from the server or a sandbox (a label, a file name, a
// command line) safe for one table cell: its control characters, which
// would drive the terminal (an escape sequence setting the clipboard or
// the title) or break the row (a tab, a newline), are shown escaped as Go
// writes them (\x1b, \n), and bytes that are not UTF-8 as U+FFFD. The
// TUI flattens them likewise (tui's oneLine). Bidirectional controls
// (U+202E RIGHT-TO-LEFT OVERRIDE and its kin) are escaped too: they would
// show a label or file name backwards and reorder the row around it.
func cell(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeInCell) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafeInCell(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeInCell reports whether r would drive the terminal or reorder the
// text around it: a control character or a bidirectional control.
func unsafeInCell(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// terminalWidth is the width of the terminal w writes to, 0 when w is not
// one. A pager's pipe reports the terminal behind it.
func terminalWidth(w io.Writer) int {
	if tw, ok := w.(interface{ TerminalWidth() int }); ok {
		return tw.TerminalWidth()
	}
	if fd, ok := fdOf(w); ok && term.IsTerminal(fd) {
		if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
			return cols
		}
	}
	return 0
}
