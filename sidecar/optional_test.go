package sidecar

import (
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestNodeInterpreter: state persists between calls, console output and
// the last value come back, a thrown error is the error, a promise is
// awaited, and reset forgets.
func TestNodeInterpreter(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	base, _ := newToolServer(t, Options{})
	run := func(code string) api.InterpreterExecResult {
		t.Helper()
		var res api.InterpreterExecResult
		doJSON(t, "POST", base+"/node-interpreter/exec", api.InterpreterExecRequest{Code: code}, http.StatusOK, &res)
		return res
	}
	if res := run("let n = 40; function add(a) { return n + a }"); res.Error != nil {
		t.Fatalf("first call: %+v", res)
	}
	res := run("console.log('hello', {a: 1}); process.stdout.write('raw\\n'); add(2)")
	if res.Error != nil || res.Result == nil || *res.Result != "42" || res.Stdout != "hello { a: 1 }\nraw\n" {
		t.Errorf("second call: %+v", res)
	}
	if res := run("new Promise(r => setTimeout(() => r(n * 2), 10))"); res.Result == nil || *res.Result != "80" {
		t.Errorf("promise: %+v", res)
	}
	if res := run("throw new Error('boom')"); res.Error == nil || !strings.Contains(*res.Error, "Error: boom") {
		t.Errorf("throw: %+v", res)
	}
	// The stack is the user's: input.js, not the driver's frames.
	if res := run("function f() { return missing }\nf()"); res.Error == nil ||
		!strings.HasPrefix(*res.Error, "input.js:1") || !strings.Contains(*res.Error, "ReferenceError: missing is not defined") ||
		!strings.Contains(*res.Error, "at f (input.js:1:") || !strings.Contains(*res.Error, "at input.js:2:1") ||
		strings.Contains(*res.Error, "runInThisContext") || strings.Contains(*res.Error, "[eval]") || strings.Contains(*res.Error, "readline") {
		t.Errorf("stack of a ReferenceError: %q", *res.Error)
	}
	if res := run("require('node:path').join('a', 'b')"); res.Result == nil || *res.Result != "'a/b'" {
		t.Errorf("require: %+v", res)
	}
	doJSON(t, "POST", base+"/node-interpreter/reset", nil, http.StatusOK, nil)
	if res := run("typeof n"); res.Result == nil || *res.Result != "'undefined'" {
		t.Errorf("after reset: %+v", res)
	}
}

func TestPTYExec(t *testing.T) {
	base, _ := newToolServer(t, Options{})
	run := func(req api.PTYExecRequest) api.PTYExecResult {
		t.Helper()
		var res api.PTYExecResult
		doJSON(t, "POST", base+"/pty-exec", req, http.StatusOK, &res)
		return res
	}
	// A program that reads from its terminal: what was typed comes back.
	res := run(api.PTYExecRequest{
		Command:    `sh -c 'test -t 0 && echo tty; read x; echo "got $x"; exit 3'`,
		InputBytes: base64.StdEncoding.EncodeToString([]byte("hello\n")),
	})
	if res.ExitCode == nil || *res.ExitCode != 3 || res.TimedOut || !strings.Contains(res.Output, "tty\r\n") || !strings.Contains(res.Output, "got hello") {
		t.Errorf("read from the tty: %+v", res)
	}
	// Not through a shell: $HOME and ; are words.
	res = run(api.PTYExecRequest{Command: `echo "$HOME;" 'a b'`})
	if res.ExitCode == nil || *res.ExitCode != 0 || strings.TrimSpace(res.Output) != "$HOME; a b" {
		t.Errorf("no shell: %+v", res)
	}
	res = run(api.PTYExecRequest{Command: "sleep 10", TimeoutSeconds: 0.2})
	if !res.TimedOut || res.ExitCode != nil {
		t.Errorf("timeout: %+v", res)
	}
	res = run(api.PTYExecRequest{Command: "no-such-program-x"})
	if res.ExitCode == nil || *res.ExitCode != 127 {
		t.Errorf("missing program: %+v", res)
	}
	doJSON(t, "POST", base+"/pty-exec", api.PTYExecRequest{Command: `echo 'unbalanced`}, http.StatusUnprocessableEntity, nil)
	doJSON(t, "POST", base+"/pty-exec", api.PTYExecRequest{Command: "echo", InputBytes: "!!"}, http.StatusUnprocessableEntity, nil)
}

func TestSplitWords(t *testing.T) {
	tests := map[string][]string{
		`a b  c`:              {"a", "b", "c"},
		`'a b' "c d" e\ f`:    {"a b", "c d", "e f"},
		`"x\"y\\z\n" 'q\'`:    {`x"y\z\n`, `q\`},
		`a''b ""`:             {"ab", ""},
		"  ":                  nil,
		`echo $(rm -rf /); x`: {"echo", "$(rm", "-rf", "/);", "x"},
	}
	for in, want := range tests {
		got, err := splitWords(in)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'a`, `"a`, `a\`} {
		if _, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q): no error", bad)
		}
	}
}

// FuzzSplitWords: words joined with single quotes split back to themselves.
func FuzzSplitWords(f *testing.F) {
	f.Add(`a 'b c' "d\"e"`)
	f.Add(`\\ \' "$x"`)
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
		}
		again, err := splitWords(strings.Join(quoted, " "))
		if err != nil || !cmp.Equal(again, words) {
			t.Fatalf("%q: %q, then %q (%v)", s, words, again, err)
		}
	})
}

// TestOptionalTimeoutRefused: node-interpreter's timeout outside 1..300 and
// pty-exec's outside 0.1..120 are refused with 422 naming the field, the
// range and the default, as exec's and the tools' are; they were clamped
// (301 ran with 300). Refused before anything starts: no node needed.
// Python's interpreter keeps the reference's clamp.
func TestOptionalTimeoutRefused(t *testing.T) {
	base, _ := newToolServer(t, Options{})
	for _, tt := range []struct {
		route, body, msg, hint string
	}{
		{
			"/node-interpreter/exec", `{"code":"1","timeout":301}`,
			"timeout must be between 1 and 300 seconds, got 301", "omit timeout for the default of 30 seconds",
		},
		{
			"/node-interpreter/exec", `{"code":"1","timeout":-1}`,
			"timeout must be between 1 and 300 seconds, got -1", "omit timeout for the default of 30 seconds",
		},
		{
			"/pty-exec", `{"command":"true","timeout_seconds":121}`,
			"timeout_seconds must be between 0.1 and 120 seconds, got 121", "omit timeout_seconds for the default of 30 seconds",
		},
		{
			"/pty-exec", `{"command":"true","timeout_seconds":0.05}`,
			"timeout_seconds must be between 0.1 and 120 seconds, got 0.05", "omit timeout_seconds for the default of 30 seconds",
		},
		{
			"/pty-exec", `{"command":"true","timeout_seconds":-3}`,
			"timeout_seconds must be between 0.1 and 120 seconds, got -3", "omit timeout_seconds for the default of 30 seconds",
		},
	} {
		var env api.ErrorEnvelope
		doJSON(t, "POST", base+tt.route, tt.body, http.StatusUnprocessableEntity, &env)
		want := &api.Error{Code: api.CodeValidation, Message: tt.msg, Hint: tt.hint}
		if env.Error == nil || env.Error.Code != want.Code || env.Error.Message != want.Message || env.Error.Hint != want.Hint {
			t.Errorf("%s %s: %+v, want %+v", tt.route, tt.body, env.Error, want)
		}
	}
	// In range, and Python's out of range (clamped), still run.
	var res api.PTYExecResult
	doJSON(t, "POST", base+"/pty-exec", `{"command":"true","timeout_seconds":120}`, http.StatusOK, &res)
	doJSON(t, "POST", base+"/interpreter/exec", `{"code":"1","timeout":301}`, http.StatusOK, nil)
}
