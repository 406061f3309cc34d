package sidecar

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func interpExec(t testing.TB, url, code string, timeout, wantStatus int) api.InterpreterExecResult {
	t.Helper()
	var res api.InterpreterExecResult
	var out any = &res
	if wantStatus != http.StatusOK {
		out = nil
	}
	body := doJSON(t, http.MethodPost, url+"/interpreter/exec", api.InterpreterExecRequest{Code: code, Timeout: timeout}, wantStatus, out)
	if wantStatus != http.StatusOK {
		if e := decodeError(t, body); e.Code != api.CodeSandboxFailed && wantStatus == http.StatusBadGateway {
			t.Errorf("code %q, want %q", e.Code, api.CodeSandboxFailed)
		}
	}
	return res
}

func strPtr(s string) *string { return &s }

func TestInterpreter(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})

	var st api.InterpreterStatus
	doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
	if st.Running {
		t.Errorf("status before first use: running")
	}

	steps := []struct {
		name string
		code string
		want api.InterpreterExecResult
	}{
		{"assignment has no result", "x = 1", api.InterpreterExecResult{}},
		{"globals persist", "x + 1", api.InterpreterExecResult{Result: strPtr("2")}},
		{"repr of the last expression", "'a' * 3", api.InterpreterExecResult{Result: strPtr("'aaa'")}},
		{"None is no result", "None", api.InterpreterExecResult{}},
		{"statements then an expression", "def f(n):\n    return n * 2\ny = f(x)\ny", api.InterpreterExecResult{Result: strPtr("2")}},
		{"stdout and stderr together, in order", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nprint('out2')", api.InterpreterExecResult{Stdout: "out\nerr\nout2\n"}},
		{"output of child processes", "import os\nos.system('echo from-shell')\nprint('after')", api.InterpreterExecResult{Stdout: "from-shell\nafter\n"}},
		{"output and result", "print('hi')\n40 + 2", api.InterpreterExecResult{Stdout: "hi\n", Result: strPtr("42")}},
		{"stdin is empty", "import sys\nsys.stdin.read()", api.InterpreterExecResult{Result: strPtr("''")}},
	}
	for _, s := range steps {
		got := interpExec(t, url, s.code, 0, http.StatusOK)
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: exec %q (-want +got):\n%s", s.name, s.code, diff)
		}
	}

	got := interpExec(t, url, "print('before')\n1/0", 0, http.StatusOK)
	if got.Error == nil || !strings.Contains(*got.Error, "ZeroDivisionError") || !strings.Contains(*got.Error, `File "<input>", line 2`) {
		t.Errorf("error = %v, want a traceback of the ZeroDivisionError at <input> line 2", got.Error)
	} else if strings.Contains(*got.Error, "driver") || strings.Contains(*got.Error, `File "<string>"`) {
		t.Errorf("traceback shows the driver's frames:\n%s", *got.Error)
	}
	if got.Stdout != "before\n" || got.Result != nil {
		t.Errorf("exec with an error: stdout %q result %v, want the output before it and no result", got.Stdout, got.Result)
	}
	if got := interpExec(t, url, "def (", 0, http.StatusOK); got.Error == nil || !strings.Contains(*got.Error, "SyntaxError") {
		t.Errorf("syntax error: %v", got.Error)
	}
	if got := interpExec(t, url, "raise SystemExit(3)", 0, http.StatusOK); got.Error == nil || !strings.Contains(*got.Error, "SystemExit") {
		t.Errorf("SystemExit: %v, want it reported, not the interpreter gone", got.Error)
	}
	if got := interpExec(t, url, "x", 0, http.StatusOK); got.Result == nil || *got.Result != "1" {
		t.Errorf("x after errors = %v, want 1: errors must keep the state", got.Result)
	}

	got = interpExec(t, url, "print('y' * 300000)", 0, http.StatusOK)
	if !got.Truncated || len(got.Stdout) != 256<<10 {
		t.Errorf("big output: truncated %v, %d bytes; want truncated at %d", got.Truncated, len(got.Stdout), 256<<10)
	}

	doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
	if !st.Running || st.StartedAt == nil || st.IdleSeconds == nil {
		t.Errorf("status after use = %+v, want running with a start and idle time", st)
	}

	// A timeout kills the interpreter and loses its state; the next call starts afresh.
	interpExec(t, url, "while True: pass", 1, http.StatusBadGateway)
	got = interpExec(t, url, "'x' in globals()", 0, http.StatusOK)
	if got.Result == nil || *got.Result != "False" {
		t.Errorf("after a timeout: x in globals() = %v, want False", got.Result)
	}

	// A crash is a 502 too.
	interpExec(t, url, "import os\nos._exit(1)", 0, http.StatusBadGateway)
	if got := interpExec(t, url, "1 + 1", 0, http.StatusOK); got.Result == nil || *got.Result != "2" {
		t.Errorf("after a crash: %v", got.Result)
	}

	var reset api.InterpreterReset
	interpExec(t, url, "z = 5", 0, http.StatusOK)
	doJSON(t, http.MethodPost, url+"/interpreter/reset", nil, http.StatusOK, &reset)
	if reset.Status != "reset" {
		t.Errorf("reset = %+v", reset)
	}
	doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
	if st.Running {
		t.Errorf("status after reset: running")
	}
	if got := interpExec(t, url, "'z' in globals()", 0, http.StatusOK); got.Result == nil || *got.Result != "False" {
		t.Errorf("after reset: z in globals() = %v, want False", got.Result)
	}

	for _, body := range []string{`{"code":""}`, `{"code":"  \n"}`, `{}`} {
		if status, b := call(t, http.MethodPost, url+"/interpreter/exec", authed, body); status != http.StatusUnprocessableEntity {
			t.Errorf("exec %s = %d %s, want 422", body, status, b)
		}
	}
}

func TestInterpreterResetKillsARunningRequest(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	done := make(chan int, 1)
	go func() {
		status, _ := call(t, http.MethodPost, url+"/interpreter/exec", authed, `{"code":"import time\ntime.sleep(60)","timeout":120}`)
		done <- status
	}()
	// Status answers while the request runs, without waiting for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st api.InterpreterStatus
		doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
		if st.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the interpreter did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	doJSON(t, http.MethodPost, url+"/interpreter/reset", nil, http.StatusOK, nil)
	select {
	case status := <-done:
		if status != http.StatusBadGateway {
			t.Errorf("the request a reset interrupted = %d, want 502", status)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reset did not end the running request")
	}
	if got := interpExec(t, url, "1", 0, http.StatusOK); got.Result == nil || *got.Result != "1" {
		t.Errorf("after reset: %v", got.Result)
	}
}

func TestInterpreterIdleReap(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{InterpreterIdle: 200 * time.Millisecond}})
	interpExec(t, url, "x = 1", 0, http.StatusOK)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st api.InterpreterStatus
		doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
		if !st.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the interpreter still runs 10s after it went idle: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := interpExec(t, url, "'x' in globals()", 0, http.StatusOK); got.Result == nil || *got.Result != "False" {
		t.Errorf("after the idle reap: %v, want a fresh interpreter", got.Result)
	}
}

// TestInterpreterRequestEnv: a request's env (the E2B facade's runCode
// envs) holds for that request only, and sets no line of the code, whose
// traceback line numbers stay its own. The envs of a call stayed set for
// every later call, and a line set them, so tracebacks were one line off.
func TestInterpreterRequestEnv(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	exec := func(code string, env map[string]string) api.InterpreterExecResult {
		t.Helper()
		var res api.InterpreterExecResult
		doJSON(t, http.MethodPost, url+"/interpreter/exec", map[string]any{"code": code, "env": env}, http.StatusOK, &res)
		return res
	}
	exec("import os\nos.environ['B'] = 'before'", nil)
	got := exec("seen = (os.environ.get('A'), os.environ.get('B'))\nos.environ['MINE'] = 'm'\nos.environ['C'] = 'changed'\n1/0",
		map[string]string{"A": "a", "B": "call", "C": "c"})
	if got.Error == nil || !strings.Contains(*got.Error, `File "<input>", line 4`) {
		t.Errorf("error = %v, want the ZeroDivisionError at <input> line 4", got.Error)
	}
	want := "(('a', 'call'), None, 'before', 'changed', 'm')"
	got = exec("(seen, os.environ.get('A'), os.environ.get('B'), os.environ.get('C'), os.environ.get('MINE'))", nil)
	if got.Result == nil || *got.Result != want {
		t.Errorf("after the call with env: %v (error %v), want %s (its env put back, what the code set kept)", deref(got.Result), deref(got.Error), want)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestInterpreterFacadeFrames: a cell that runs the user's code through a
// function compiled as <boxkite> (the E2B facade's runner of a code
// context) gets a traceback of the user's code only: not the cell's call
// line (line 2 of the cell) nor the runner's frames, which came first.
func TestInterpreterFacadeFrames(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	runner := "exec(compile(\"def run(code):\\n    exec(compile(code, '<input>', 'exec'), {})\\n\", '<boxkite>', 'exec'), globals())\n"
	for code, want := range map[string]string{
		`run("x = 1\n1/0")`: "Traceback (most recent call last):\n  File \"<input>\", line 2, in <module>\nZeroDivisionError",
		`run("def (")`:      "  File \"<input>\", line 1\n",
	} {
		got := interpExec(t, url, runner+code, 0, http.StatusOK)
		if got.Error == nil || !strings.HasPrefix(*got.Error, want) || strings.Count(*got.Error, "File ") != 1 || strings.Contains(*got.Error, "boxkite") {
			t.Errorf("%s: traceback\n%s\nwant it to start %q, with no other frame", code, deref(got.Error), want)
		}
	}
}
