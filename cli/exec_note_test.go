package cli

import (
	"strings"
	"testing"
)

// TestNoteHold: the sandbox's timeout note is dropped when the command
// timed out, however the stream cut it and whether or not the command's
// last line ended; anything else, a look-alike prefix included, is written
// whole and in order.
func TestNoteHold(t *testing.T) {
	t.Parallel()
	note := timeoutNote(1)
	tests := []struct {
		name    string
		chunks  []string
		timeout bool
		want    string
	}{
		{"note alone", []string{"err\n", note}, true, "err\n"},
		{"note cut in pieces", []string{"err\n", "Comm", "and timed", " out after 1s"}, true, "err\n"},
		{"glued to a partial line", []string{"partial" + note}, true, "partial"},
		{"no timeout keeps it", []string{"x\n", note}, false, "x\n" + note},
		{"a prefix that is not the note", []string{"Command", " not found\n"}, true, "Command not found\n"},
		{"a prefix at the end", []string{"Command timed"}, true, "Command timed"},
		{"the note twice, the last dropped", []string{note + "\n" + note}, true, note + "\n"},
		{"another timeout's note", []string{timeoutNote(5)}, true, timeoutNote(5)},
	}
	for _, tt := range tests {
		var b strings.Builder
		h := &noteHold{w: &b, note: note}
		for _, c := range tt.chunks {
			if n, err := h.Write([]byte(c)); n != len(c) || err != nil {
				t.Fatalf("%s: Write(%q) = %d, %v", tt.name, c, n, err)
			}
		}
		if err := h.end(tt.timeout); err != nil {
			t.Fatalf("%s: end: %v", tt.name, err)
		}
		if b.String() != tt.want {
			t.Errorf("%s: wrote %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}
