package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/boxkite/boxkite/client/api"
)

// ShortDuration prints d the way people say it, in the TUI and in every
// CLI table: 45s, 12m, 3h5m, 2d4h.
func ShortDuration(d time.Duration) string {
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

// Age is how long ago t was, or "-" when it is unset.
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return ShortDuration(now.Sub(t))
}

// Expiry says when an active sandbox expires: "in 12m", "now", "paused"
// (its lifetime does not run), or "-".
func Expiry(sb api.Sandbox, now time.Time) string {
	switch {
	case sb.Status == api.StatusPaused:
		return "paused"
	case sb.Status != api.StatusActive || sb.ExpiresAt.IsZero():
		return "-"
	case !sb.ExpiresAt.After(now):
		return "now"
	}
	return "in " + ShortDuration(sb.ExpiresAt.Sub(now))
}

// FrozenText says why a sandbox is frozen, from its frozen_reason
// (api.FrozenHostDisk, api.FrozenClonePool; an unknown or empty one is
// the host's disk, what frozen alone meant), and that it thaws by itself.
func FrozenText(reason string) string {
	if reason == api.FrozenClonePool {
		return "the clone pool that holds the sandboxes' disks ran out of space; it resumes once space is freed in it"
	}
	return "the host ran out of disk space; it resumes once space is freed"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fit cuts s to width cells (with an ellipsis) or pads it to width.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	s = ansi.Truncate(s, width, "…")
	if w := ansi.StringWidth(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// oneLine flattens control characters so a command stays on its row and
// cannot drive the terminal, and bidirectional controls (U+202E and its
// kin) so a label cannot show backwards and reorder its row.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s)
}

// entryDetail decodes the JSON object of a log entry's detail; a detail
// that is not an object gives nil.
func entryDetail(e api.LogEntry) map[string]any {
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Detail))
	dec.UseNumber()
	if dec.Decode(&d) != nil {
		return nil
	}
	return d
}

// entrySummary is the one-line gist of an entry: an exec's command, a
// file operation's path, or the compact detail.
func entrySummary(e api.LogEntry) string {
	d := entryDetail(e)
	for _, k := range []string{"command", "code", "path", "pattern", "process_id"} {
		if v, ok := d[k].(string); ok && v != "" {
			return oneLine(v)
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, e.Detail) != nil || b.String() == "null" || b.String() == "{}" {
		return ""
	}
	return oneLine(b.String())
}

func exitText(e api.LogEntry) string {
	if e.ExitCode == nil {
		return "-"
	}
	return fmt.Sprint(*e.ExitCode)
}

// wrap breaks s into lines of at most width cells, keeping its own line
// breaks. Escape sequences and control characters in s (command output is
// arbitrary bytes) are removed first, so they cannot move the cursor or
// recolour the screen.
func wrap(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	s = strings.ReplaceAll(ansi.Strip(strings.ToValidUTF8(s, "\uFFFD")), "\r\n", "\n")
	var out []string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		line = oneLine(strings.ReplaceAll(line, "\t", "    "))
		w := ansi.Hardwrap(line, width, true)
		out = append(out, strings.Split(w, "\n")...)
	}
	return out
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// shortID is the first 8 characters of a sandbox id: unique in practice,
// and accepted wherever the CLI takes an id prefix.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
