package cli

import (
	"encoding/json"
	"fmt"
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

// shortDuration formats d the way people say it: 45s, 12m, 3h5m, 2d4h.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
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
