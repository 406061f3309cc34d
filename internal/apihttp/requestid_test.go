package apihttp

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestRequestID checks validRequestID against the pattern it replaced.
func TestRequestID(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	for _, id := range []string{
		"", "a", "req-1", "A.b_c:d-e", strings.Repeat("x", 128), strings.Repeat("x", 129),
		"a b", "a\nb", "ü", "a/b", "a=b", "\x00", "abc\x7f", "[x]",
	} {
		if got, want := validRequestID(id), pattern.MatchString(id); got != want {
			t.Errorf("validRequestID(%q) = %v, want %v", id, got, want)
		}
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-Request-ID", id)
		if kept := RequestID(r) == id; kept != pattern.MatchString(id) {
			t.Errorf("RequestID kept %q: %v", id, kept)
		}
	}
}

func FuzzRequestID(f *testing.F) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	f.Add("req-1")
	f.Add("a b")
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := validRequestID(id), pattern.MatchString(id); got != want {
			t.Errorf("validRequestID(%q) = %v, want %v", id, got, want)
		}
	})
}
