package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 0, ""},
		{"abc", -3, ""},
		{"", 0, ""},
		{"abc", 1, "…"},
		{"abc", 2, "a…"},
		{"abc", 3, "abc"},
		{"abc", 10, "abc"},
		// Wide characters take two cells: a cut by runes would print four.
		{"日本語", 4, "日…"},
		{"日本語", 6, "日本語"},
		{"日本語", 1, "…"},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// FuzzTruncate checks what every caller relies on: the result fits its
// column, is whole characters, and is the input itself when that fits.
func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"", "abc", "日本語", "a\u0301b", "🙂🙂🙂", "x\x1b[31my"} {
		for _, n := range []int{-1, 0, 1, 2, 3, 80} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := truncate(s, n)
		if w := ansi.StringWidth(got); w > max(n, 0) {
			t.Fatalf("truncate(%q, %d) = %q, %d cells wide", s, n, got, w)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("truncate(%q, %d) = %q cuts a character", s, n, got)
		}
		if n > 0 && ansi.StringWidth(s) <= n && got != s {
			t.Fatalf("truncate(%q, %d) = %q, want the input, which fits", s, n, got)
		}
		if got != s && n > 0 && !strings.HasSuffix(got, "…") && !strings.Contains(got, "…") {
			t.Fatalf("truncate(%q, %d) = %q cuts without the mark", s, n, got)
		}
	})
}
