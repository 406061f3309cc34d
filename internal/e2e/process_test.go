package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// startProc starts a background process and returns its id.
func (sb *sandbox) startProc(command string, maxRuntime int) string {
	sb.t.Helper()
	status, body := sb.route("POST", "/processes", api.ProcessStartRequest{Command: command, MaxRuntimeSeconds: maxRuntime})
	if status != http.StatusCreated {
		sb.t.Fatalf("start %q = %d %s, want 201", command, status, body)
	}
	var p api.ProcessStarted
	mustDecode(sb.t, body, &p)
	if !strings.HasPrefix(p.ProcessID, "proc_") || len(p.ProcessID) != len("proc_")+32 || p.Status != api.ProcessRunning {
		sb.t.Fatalf("start %q = %+v", command, p)
	}
	return p.ProcessID
}

// output reads a process's output from since on.
func (sb *sandbox) output(id string, since int64) api.ProcessOutput {
	sb.t.Helper()
	var out api.ProcessOutput
	mustDecode(sb.t, sb.ok("GET", fmt.Sprintf("/processes/%s/output?since_offset=%d", id, since), nil), &out)
	return out
}

// waitProc polls a process's output until done says so, for up to 20 s.
func (sb *sandbox) waitProc(id string, done func(api.ProcessOutput) bool) api.ProcessOutput {
	sb.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := sb.output(id, 0)
		if done(out) {
			return out
		}
		if time.Now().After(deadline) {
			sb.t.Fatalf("process %s: gave up waiting; last %+v", id, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ended(out api.ProcessOutput) bool { return out.Status != api.ProcessRunning }

func exitCode(p *int) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// TestProcessLifecycle walks background processes through the reference's
// codes in a real jail: 201, 429 at four running, 404 for unknown ids, 409
// for input after the end, stop and exit statuses, the watchdog, and the
// output ring's offsets.
func TestProcessLifecycle(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	const unknown = "proc_00000000000000000000000000000000"

	cat := sb.startProc("cat", 60)
	sleeps := []string{sb.startProc("sleep 60", 60), sb.startProc("sleep 60", 60), sb.startProc("sleep 60", 60)}

	t.Run("limit of four running", func(t *testing.T) {
		sb := sb.in(t)
		status, body := sb.route("POST", "/processes", api.ProcessStartRequest{Command: "true", MaxRuntimeSeconds: 5})
		wantErr(t, "fifth start", status, body, http.StatusTooManyRequests, "")
		if e := apiError(t, body); e.Code != api.CodeLimitExceeded {
			t.Errorf("code = %q, want %q", e.Code, api.CodeLimitExceeded)
		}
	})
	t.Run("bad starts", func(t *testing.T) {
		sb := sb.in(t)
		for _, rt := range []int{0, -1, api.MaxProcessRuntime + 1} {
			// Sent explicitly: an absent max_runtime_seconds takes the default.
			status, body := sb.route("POST", "/processes", map[string]any{"command": "true", "max_runtime_seconds": rt})
			if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
				t.Errorf("max_runtime_seconds %d = %d %s, want 400 or 422", rt, status, body)
			}
		}
	})
	t.Run("unknown ids", func(t *testing.T) {
		sb := sb.in(t)
		for _, c := range []struct{ method, rest string }{
			{"GET", "/processes/" + unknown + "/output"},
			{"POST", "/processes/" + unknown + "/input"},
			{"POST", "/processes/" + unknown + "/stop"},
			{"GET", "/processes/" + unknown + "/stream"},
		} {
			var body any
			if strings.HasSuffix(c.rest, "/input") {
				body = api.ProcessInputRequest{Data: "x"}
			}
			status, b := sb.route(c.method, c.rest, body)
			wantErr(t, c.method+" "+c.rest, status, b, http.StatusNotFound, "")
		}
	})
	t.Run("input and output", func(t *testing.T) {
		sb := sb.in(t)
		var in api.ProcessInputResult
		mustDecode(t, sb.ok("POST", "/processes/"+cat+"/input", api.ProcessInputRequest{Data: "hello\n"}), &in)
		if in.BytesWritten != 6 {
			t.Errorf("bytes_written = %d, want 6", in.BytesWritten)
		}
		out := sb.waitProc(cat, func(o api.ProcessOutput) bool { return o.NextOffset == 6 })
		if out.StdoutChunk != "hello\n" || out.Status != api.ProcessRunning || out.Truncated || out.ExitCode != nil {
			t.Errorf("output = %+v", out)
		}
		if again := sb.output(cat, 6); again.StdoutChunk != "" || again.NextOffset != 6 {
			t.Errorf("output since 6 = %+v, want nothing new", again)
		}
		if part := sb.output(cat, 2); part.StdoutChunk != "llo\n" {
			t.Errorf("output since 2 = %+v", part)
		}
	})
	t.Run("stop", func(t *testing.T) {
		sb := sb.in(t)
		var st api.ProcessStopResult
		mustDecode(t, sb.ok("POST", "/processes/"+cat+"/stop", nil), &st)
		if st.Status != api.ProcessStopped || st.ExitCode == nil {
			t.Errorf("stop = %+v (exit %s), want stopped with an exit code", st, exitCode(st.ExitCode))
		}
		status, body := sb.route("POST", "/processes/"+cat+"/input", api.ProcessInputRequest{Data: "late\n"})
		wantErr(t, "input after stop", status, body, http.StatusConflict, "")
		if out := sb.output(cat, 0); out.Status != api.ProcessStopped || out.StdoutChunk != "hello\n" {
			t.Errorf("output after stop = %+v", out)
		}
		// The slot is free again.
		sb.waitProc(sb.startProc("exit 0", 5), ended)
	})
	t.Run("exit by itself", func(t *testing.T) {
		sb := sb.in(t)
		var killed api.KillAllResult
		mustDecode(t, sb.ok("POST", "/processes/kill-all", nil), &killed)
		if killed.Killed != len(sleeps) {
			t.Errorf("kill-all killed %d, want %d", killed.Killed, len(sleeps))
		}
		id := sb.startProc("echo done; exit 3", 60)
		out := sb.waitProc(id, ended)
		if out.Status != api.ProcessExited || exitCode(out.ExitCode) != "3" || out.StdoutChunk != "done\n" {
			t.Errorf("output = %+v (exit %s), want exited 3 with done", out, exitCode(out.ExitCode))
		}
		status, body := sb.route("POST", "/processes/"+id+"/input", api.ProcessInputRequest{Data: "x"})
		wantErr(t, "input after exit", status, body, http.StatusConflict, "")
		var st api.ProcessStopResult
		mustDecode(t, sb.ok("POST", "/processes/"+id+"/stop", nil), &st)
		if st.Status != api.ProcessExited || exitCode(st.ExitCode) != "3" {
			t.Errorf("stop after exit = %+v (exit %s), want exited 3", st, exitCode(st.ExitCode))
		}
	})
	t.Run("kill-all", func(t *testing.T) {
		sb := sb.in(t)
		for _, id := range sleeps {
			if out := sb.output(id, 0); out.Status != api.ProcessKilled || exitCode(out.ExitCode) != "137" {
				t.Errorf("%s after kill-all: %+v (exit %s), want killed 137", id, out, exitCode(out.ExitCode))
			}
		}
		var list api.ProcessList
		mustDecode(t, sb.ok("GET", "/processes", nil), &list)
		running := 0
		for _, p := range list.Processes {
			if p.Status == api.ProcessRunning {
				running++
			}
		}
		if len(list.Processes) < 6 || running != 0 {
			t.Errorf("list has %d processes, %d running; want ≥ 6, none running", len(list.Processes), running)
		}
	})
	t.Run("watchdog", func(t *testing.T) {
		sb := sb.in(t)
		id := sb.startProc("sleep 30", 1)
		out := sb.waitProc(id, ended)
		if out.Status != api.ProcessKilled {
			t.Errorf("after max_runtime_seconds: %+v, want killed", out)
		}
	})
	t.Run("ring buffer", func(t *testing.T) {
		sb := sb.in(t)
		const total = 300000
		id := sb.startProc(fmt.Sprintf(`head -c %d /dev/zero | tr '\0' z`, total), 60)
		out := sb.waitProc(id, ended)
		const ring = 256 << 10
		if out.NextOffset != total || !out.Truncated || len(out.StdoutChunk) != ring {
			t.Errorf("since 0: next_offset %d, truncated %v, %d bytes; want %d, true, %d",
				out.NextOffset, out.Truncated, len(out.StdoutChunk), total, ring)
		}
		tail := sb.output(id, total-10)
		if tail.Truncated || tail.StdoutChunk != strings.Repeat("z", 10) || tail.NextOffset != total {
			t.Errorf("since %d: %+v", total-10, tail)
		}
		edge := sb.output(id, total-ring)
		if edge.Truncated || len(edge.StdoutChunk) != ring {
			t.Errorf("since the oldest kept byte: truncated %v, %d bytes", edge.Truncated, len(edge.StdoutChunk))
		}
		if past := sb.output(id, total+5); past.StdoutChunk != "" || past.NextOffset != total {
			t.Errorf("since past the end: %+v", past)
		}
	})
}

// TestInterpreter checks that the Python interpreter keeps its state
// between calls until reset.
func TestInterpreter(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	run := func(code string) api.InterpreterExecResult {
		t.Helper()
		var res api.InterpreterExecResult
		mustDecode(t, sb.ok("POST", "/interpreter/exec", api.InterpreterExecRequest{Code: code}), &res)
		return res
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	if res := run("import os\nx = 41\nprint('pid', os.getpid() > 1)"); res.Stdout != "pid True\n" || res.Result != nil || res.Error != nil {
		t.Errorf("first call = %+v", res)
	}
	if res := run("x + 1"); str(res.Result) != "42" {
		t.Errorf("x + 1 = %+v (result %s), want 42: state not kept", res, str(res.Result))
	}
	if res := run("open('/workspace/py.txt', 'w').write('from python')"); str(res.Result) != "11" {
		t.Errorf("write = %s", str(res.Result))
	}
	if out := sb.sh("cat /workspace/py.txt; echo; stat -c %U /workspace/py.txt"); out != "from python\nsandbox\n" {
		t.Errorf("file written by the interpreter: %q", out)
	}
	if res := run("1/0"); !strings.Contains(str(res.Error), "ZeroDivisionError") {
		t.Errorf("1/0 error = %s", str(res.Error))
	}
	if res := run("x"); str(res.Result) != "41" {
		t.Errorf("after an error x = %s, want 41", str(res.Result))
	}
	var st api.InterpreterStatus
	mustDecode(t, sb.ok("GET", "/interpreter/status", nil), &st)
	if !st.Running {
		t.Errorf("status = %+v, want running", st)
	}
	sb.ok("POST", "/interpreter/reset", nil)
	if res := run("x"); !strings.Contains(str(res.Error), "NameError") {
		t.Errorf("after reset x = %+v (error %s), want NameError", res, str(res.Error))
	}
	if res := run("print('x' * 400000)"); !res.Truncated || len(res.Stdout) != 256<<10 {
		t.Errorf("400,000 bytes printed: truncated %v, %d bytes kept; want true, 256 KiB", res.Truncated, len(res.Stdout))
	}
	run("kept = 1")
	status, body := sb.route("POST", "/interpreter/exec", api.InterpreterExecRequest{Code: "import time; time.sleep(30)", Timeout: 1})
	wantErr(t, "interpreter past its timeout", status, body, http.StatusBadGateway, "timed out after 1s")
	if res := run("'kept' in globals()"); str(res.Result) != "False" {
		t.Errorf("after a timeout the interpreter kept its globals: %+v", res)
	}
	status, body = sb.route("POST", "/interpreter/exec", api.InterpreterExecRequest{Code: ""})
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		t.Errorf("empty code = %d %s, want 400 or 422", status, body)
	}
}
