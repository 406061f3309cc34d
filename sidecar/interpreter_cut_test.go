package sidecar

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// TestInterpreterCutsResultAndError: both interpreters cut a result and
// an error to api.MaxInterpreterOutput bytes (UTF-8, never mid-character),
// which the server's held-output budget counts on (hold.Interpreter); a
// cut error keeps its start and its end.
func TestInterpreterCutsResultAndError(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	base, _ := newToolServer(t, Options{})
	const mark = "\n... (truncated) ...\n"
	tests := []struct {
		name, route, result, raise string
		errStart, errEnd           string // in a cut error's start and its end
	}{
		{"python", "/interpreter/exec", "'é' * 300000", "raise ValueError('é' * 300000 + 'END')", "Traceback", "éEND\n"},
		// util.inspect cuts a string at 10,000 characters, not an array of them.
		{"node", "/node-interpreter/exec", "Array.from({length: 100}, () => 'é'.repeat(5000))", "throw new Error('é'.repeat(300000) + 'END')", "Error: éé", "    at "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var res api.InterpreterExecResult
			doJSON(t, http.MethodPost, base+tc.route, api.InterpreterExecRequest{Code: tc.result}, http.StatusOK, &res)
			if res.Result == nil {
				t.Fatalf("result: %+v", res)
			}
			r := *res.Result
			body, ok := strings.CutSuffix(r, "... (truncated)")
			if !ok || len(body) > api.MaxInterpreterOutput || len(body) < api.MaxInterpreterOutput-4 || !utf8.ValidString(body) {
				t.Errorf("result of %d bytes (valid UTF-8 %v), ends %q; want at most %d bytes and the mark", len(r), utf8.ValidString(r), r[max(0, len(r)-20):], api.MaxInterpreterOutput)
			}

			res = api.InterpreterExecResult{}
			doJSON(t, http.MethodPost, base+tc.route, api.InterpreterExecRequest{Code: tc.raise}, http.StatusOK, &res)
			if res.Error == nil {
				t.Fatalf("error: %+v", res)
			}
			e := *res.Error
			start, end, ok := strings.Cut(e, mark)
			if !ok || len(start)+len(end) > api.MaxInterpreterOutput || !utf8.ValidString(e) ||
				!strings.Contains(start, tc.errStart) || !strings.Contains(end, tc.errEnd) {
				t.Errorf("error of %d bytes (valid UTF-8 %v): starts %q, ends %q; want at most %d bytes around the mark, %q in its start and %q in its end",
					len(e), utf8.ValidString(e), e[:min(len(e), 40)], e[max(0, len(e)-60):], api.MaxInterpreterOutput, tc.errStart, tc.errEnd)
			}
		})
	}
}
