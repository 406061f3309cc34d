package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// outputFlags are --json and -o/--output, on every command that prints data.
type outputFlags struct {
	json   bool
	format string
}

func (o *outputFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON (the API's shapes)")
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "output `format`: text or json")
}

// wantJSON validates the flags and reports whether JSON was asked for.
func (o *outputFlags) wantJSON(cmd *cobra.Command) (bool, error) {
	switch o.format {
	case "text", "table", "":
		return o.json, nil
	case "json":
		return true, nil
	}
	return false, usageErrorf(helpHint(cmd), "unknown output format %q (want text or json)", o.format)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "&&" in a command stays readable
	return enc.Encode(v)
}

// table lays out aligned columns; call Flush when done. Its header may be
// bold: the codes are added after the layout, so they take no column
// width (tabwriter counts every byte of a cell, escapes too).
type table struct {
	*tabwriter.Writer
	out        io.Writer
	buf        bytes.Buffer
	boldHeader bool
}

// newTable returns a table writing to w.
func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Header writes the header row (tab-separated), bold when color is set.
func (t *table) Header(color bool, cols string) {
	t.boldHeader = color
	fmt.Fprintln(t.Writer, cols)
}

// Flush lays out what was written and writes it out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	b := t.buf.Bytes()
	if t.boldHeader {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			// The padding of the last column is trimmed by tabwriter;
			// the bold covers the header's text only.
			b = slices.Concat([]byte("\x1b[1m"), bytes.TrimRight(b[:i], " "), []byte("\x1b[0m"), b[i:])
		}
		t.boldHeader = false
	}
	_, err := t.out.Write(b)
	t.buf.Reset()
	return err
}

// compactDuration is time.Duration's String without zero units: 2h, 1h30m, 30s.
func compactDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
