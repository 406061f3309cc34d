package secrets

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRedactorEchoForms checks the spellings other encoders give a value
// when a destination echoes it: each must be redacted, not only Go's.
func TestRedactorEchoForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, echo string
	}{
		{"raw", "ab/cd+ef", `ab/cd+ef`},
		{"json slash escaped (PHP)", "ab/cd+ef", `{"h":"ab\/cd+ef"}`},
		{"json ascii-only (Python)", "pässwörd", `{"h":"p\u00e4ssw\u00f6rd"}`},
		{"json ascii-only, upper hex", "pässwörd", `{"h":"p\u00E4ssw\u00F6rd"}`},
		{"json ascii-only and slash", "clé/x", `{"h":"cl\u00e9\/x"}`},
		{"json surrogate pair", "\U0001F600key", `"\ud83d\ude00key"`},
		{"json surrogate pair, upper hex", "\U0001F600key", `"\uD83D\uDE00key"`},
		{"json html escaped (Go)", "a<b>&", `"a\u003cb\u003e\u0026"`},
		{"json quote and tab", "x\"y\tz", `"x\"y\tz"`},
		{"encodeURIComponent", "a b&c", "q=a%20b%26c"},
		{"form encoded", "a b&c", "q=a+b%26c"},
		{"percent, lower hex", "é/x", "%c3%a9%2fx"},
		{"path, lower hex", "é/x", "/%c3%a9/x"},
		{"base64", "pässwörd", "cMOkc3N3w7ZyZA=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := newRedactor(map[string]string{"S": tt.value}).apply("before " + tt.echo + " after")
			if want := "[REDACTED_SECRET:S]"; !strings.Contains(got, want) || strings.Count(got, "after") != 1 {
				t.Errorf("%q echoed as %s: got %q, want the echo replaced by %s", tt.value, tt.echo, got, want)
			}
		})
	}
}

// TestReadAnswerRedactsHeaderNames: a destination that names a header of
// its answer after a value it was sent shows it in the name.
func TestReadAnswerRedactsHeaderNames(t *testing.T) {
	t.Parallel()
	const value = "tok9f8e7d6c5b4a"
	resp := &http.Response{
		StatusCode: 200,
		Header:     http.Header{"X-Seen-" + value: {"1"}, "X-Plain": {"v=" + value}},
		Body:       io.NopCloser(strings.NewReader("ok")),
	}
	out, err := readAnswer(resp, newRedactor(map[string]string{"S": value}), []string{"S"}, "h")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out.Headers)
	if strings.Contains(string(got), value) || out.Headers["X-Seen-[REDACTED_SECRET:S]"] != "1" || out.Headers["X-Plain"] != "v=[REDACTED_SECRET:S]" {
		t.Errorf("headers %s; want the value redacted in names and values", got)
	}
}
