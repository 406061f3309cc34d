package tui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"

	"github.com/boxkite/boxkite/client/api"
)

func TestWrapStripsTerminalControl(t *testing.T) {
	got := wrap("\x1b[31mred\x1b[0m\r\nbell\a\x1b]0;title\x07\tend\xff", 80)
	want := []string{"red", "bell     end\uFFFD"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{45 * time.Second, "45s"},
		{12 * time.Minute, "12m"},
		{3*time.Hour + 5*time.Minute, "3h5m"},
		{2 * time.Hour, "2h"},
		{50 * time.Hour, "2d2h"},
		{72 * time.Hour, "3d"},
		{-90 * time.Second, "1m"},
	}
	for _, tt := range tests {
		if got := ShortDuration(tt.d); got != tt.want {
			t.Errorf("ShortDuration(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// FuzzEntryLines renders arbitrary audit entries, as a server (or an
// attacker with a sandbox) could write them: every line fits the width
// and carries no control characters.
func FuzzEntryLines(f *testing.F) {
	f.Add("exec", `{"command":"echo hi","timeout":30}`, 80)
	f.Add("file_create", `{"path":"a\u001b[2Jb"}`, 20)
	f.Add("takeover_start", `null`, 5)
	f.Add("x", `{"command":"a\nb\tc\u0007"}`, 40)
	f.Fuzz(func(t *testing.T, op, detail string, width int) {
		width = 10 + abs(width)%200
		m := New(Options{Location: time.UTC})
		exit := 3
		e := api.LogEntry{ID: "e1", Source: api.LogSourceAgent, Operation: op, Detail: json.RawMessage(detail), ExitCode: &exit}
		lines := append([]string{m.entryLine(e, width)}, m.entryDetailLines(e, width)...)
		for _, l := range lines {
			if w := lipgloss.Width(l); w > width {
				t.Errorf("line %q is %d wide, more than %d", l, w, width)
			}
			if strings.ContainsFunc(l, func(r rune) bool { return unicode.IsControl(r) }) {
				t.Errorf("line %q has a control character", l)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestOneLineFlattens: control characters and bidirectional controls
// become spaces, so a label stays on its row, drives no terminal and does
// not show backwards.
func TestOneLineFlattens(t *testing.T) {
	for in, want := range map[string]string{
		"plain ✓":               "plain ✓",
		"a\nb\tc\x1b[31m":       "a b c [31m",
		"\u202egpj.exe":         " gpj.exe",
		"x\u2066y\u2069z\u200f": "x y z ",
		"c1\u009bx":             "c1 x",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
