package cli

import (
	"encoding/json"
	"io"
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

// newTable returns a tabwriter for aligned columns; call Flush when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// bold makes a table header stand out when colour is allowed.
func bold(color bool, s string) string {
	if !color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
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
