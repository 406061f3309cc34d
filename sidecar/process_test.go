package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// newToolServer serves a Handler for opts on loopback until the test ends
// (serve). Token defaults to testToken and
// Workspace to a fresh temp dir.
func newToolServer(t testing.TB, opts Options) (url string, h *Handler) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h = New(opts)
	return serve(t, h).URL, h
}

// doJSON sends body (JSON-encoded unless a string) with the token, checks
// the status and decodes the answer into out, if not nil.
func doJSON(t testing.TB, method, url string, body any, wantStatus int, out any) []byte {
	t.Helper()
	s, ok := body.(string)
	if !ok && body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		s = string(b)
	}
	status, b := call(t, method, url, authed, s)
	if status != wantStatus {
		t.Fatalf("%s %s %s = %d %s, want %d", method, url, s, status, b, wantStatus)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
	}
	return b
}

func startProcess(t testing.TB, url, command string, maxRuntime int) string {
	t.Helper()
	var got api.ProcessStarted
	doJSON(t, http.MethodPost, url+"/process/start", api.ProcessStartRequest{Command: command, MaxRuntimeSeconds: maxRuntime}, http.StatusCreated, &got)
	if !regexp.MustCompile(`^proc_[0-9a-f]{32}$`).MatchString(got.ProcessID) || got.Status != api.ProcessRunning || got.StartedAt.IsZero() {
		t.Fatalf("start %q = %+v, want a proc_ id, running and a start time", command, got)
	}
	return got.ProcessID
}

func processOutput(t testing.TB, url, id string, since int64) api.ProcessOutput {
	t.Helper()
	var out api.ProcessOutput
	doJSON(t, http.MethodGet, fmt.Sprintf("%s/process/%s/output?since_offset=%d", url, id, since), nil, http.StatusOK, &out)
	return out
}

// waitProcess polls until the process is no longer running.
func waitProcess(t testing.TB, url, id string, within time.Duration) api.ProcessOutput {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := processOutput(t, url, id, 0)
		if out.Status != api.ProcessRunning {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s still running after %s; output %q", id, within, out.StdoutChunk)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func intPtr(i int) *int { return &i }

func TestProcessLifecycle(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{MaxProcesses: 2}})

	id := startProcess(t, url, "echo out; echo err >&2; exit 3", 60)
	got := waitProcess(t, url, id, 10*time.Second)
	want := api.ProcessOutput{Status: api.ProcessExited, StdoutChunk: "out\nerr\n", NextOffset: 8, ExitCode: intPtr(3)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output of a finished process (-want +got):\n%s", diff)
	}
	if got := processOutput(t, url, id, 4); got.StdoutChunk != "err\n" || got.Truncated {
		t.Errorf("output since 4 = %+v, want err and not truncated", got)
	}
	if got := processOutput(t, url, id, 100); got.StdoutChunk != "" || got.NextOffset != 8 {
		t.Errorf("output since past the end = %+v, want nothing at 8", got)
	}

	env := doJSON(t, http.MethodPost, url+"/process/"+id+"/input", api.ProcessInputRequest{Data: "x"}, http.StatusConflict, nil)
	if e := decodeError(t, env); e.Code != api.CodeConflict {
		t.Errorf("input after exit: code %q, want %q", e.Code, api.CodeConflict)
	}

	// The limit counts running processes only: the finished one is listed but frees its slot.
	a := startProcess(t, url, "sleep 30", 60)
	b := startProcess(t, url, "sleep 30", 60)
	env = doJSON(t, http.MethodPost, url+"/process/start", api.ProcessStartRequest{Command: "true", MaxRuntimeSeconds: 5}, http.StatusTooManyRequests, nil)
	if e := decodeError(t, env); e.Code != api.CodeLimitExceeded {
		t.Errorf("start over the limit: code %q, want %q", e.Code, api.CodeLimitExceeded)
	}

	var list api.ProcessList
	doJSON(t, http.MethodGet, url+"/process", nil, http.StatusOK, &list)
	var ids, statuses []string
	for _, p := range list.Processes {
		ids, statuses = append(ids, p.ProcessID), append(statuses, p.Status)
	}
	if diff := cmp.Diff([]string{id, a, b}, ids); diff != "" {
		t.Errorf("GET /process ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"exited", "running", "running"}, statuses); diff != "" {
		t.Errorf("GET /process statuses (-want +got):\n%s", diff)
	}

	var stop api.ProcessStopResult
	doJSON(t, http.MethodPost, url+"/process/"+a+"/stop", nil, http.StatusOK, &stop)
	if diff := cmp.Diff(api.ProcessStopResult{Status: api.ProcessStopped, ExitCode: intPtr(128 + 15)}, stop); diff != "" {
		t.Errorf("stop (-want +got):\n%s", diff)
	}
	startProcess(t, url, "sleep 30", 60) // the stopped one freed a slot

	var killed api.KillAllResult
	doJSON(t, http.MethodPost, url+"/process/kill-all", nil, http.StatusOK, &killed)
	if killed.Killed != 2 {
		t.Errorf("kill-all killed %d, want 2", killed.Killed)
	}
	if got := processOutput(t, url, b, 0); got.Status != api.ProcessKilled {
		t.Errorf("status after kill-all = %q, want killed", got.Status)
	}
}

func TestProcessRefuses(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	missing := "proc_00000000000000000000000000000000"
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantMsg                  string
	}{
		{"explicit max runtime 0", "POST", "/process/start", `{"command":"true","max_runtime_seconds":0}`, 422, "max_runtime_seconds must be between 1 and 14400, got 0"},
		{"max runtime too long", "POST", "/process/start", `{"command":"true","max_runtime_seconds":14401}`, 422, "got 14401"},
		{"negative max runtime", "POST", "/process/start", `{"command":"true","max_runtime_seconds":-1}`, 422, "got -1"},
		{"empty command", "POST", "/process/start", `{"command":" ","max_runtime_seconds":5}`, 422, "command must not be empty"},
		{"output of unknown", "GET", "/process/" + missing + "/output", "", 404, "Process not found"},
		{"stream of unknown", "GET", "/process/" + missing + "/stream", "", 404, "Process not found"},
		{"input to unknown", "POST", "/process/" + missing + "/input", `{"data":"x"}`, 404, "Process not found"},
		{"stop unknown", "POST", "/process/" + missing + "/stop", "", 404, "Process not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := call(t, tt.method, url+tt.path, authed, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, status, body, tt.wantStatus)
			}
			if e := decodeError(t, body); !strings.Contains(e.Message, tt.wantMsg) || e.Hint == "" {
				t.Errorf("error %+v, want a message containing %q and a hint", e, tt.wantMsg)
			}
		})
	}
	t.Run("bad since_offset", func(t *testing.T) {
		t.Parallel()
		id := startProcess(t, url, "true", 5)
		for _, q := range []string{"-1", "x"} {
			if status, body := call(t, "GET", url+"/process/"+id+"/output?since_offset="+q, authed, ""); status != 400 || decodeError(t, body).Hint == "" {
				t.Errorf("since_offset=%s: %d %s, want 400 with a hint", q, status, body)
			}
		}
	})
}

func TestProcessOutputRing(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{ProcessOutputBytes: 16}})
	id := startProcess(t, url, "printf 0123456789abcdefXYZ", 10)
	waitProcess(t, url, id, 10*time.Second)
	tests := []struct {
		since int64
		want  api.ProcessOutput
	}{
		{0, api.ProcessOutput{StdoutChunk: "3456789abcdefXYZ", NextOffset: 19, Truncated: true}},
		{2, api.ProcessOutput{StdoutChunk: "3456789abcdefXYZ", NextOffset: 19, Truncated: true}},
		{3, api.ProcessOutput{StdoutChunk: "3456789abcdefXYZ", NextOffset: 19}},
		{16, api.ProcessOutput{StdoutChunk: "XYZ", NextOffset: 19}},
		{19, api.ProcessOutput{StdoutChunk: "", NextOffset: 19}},
	}
	for _, tt := range tests {
		got := processOutput(t, url, id, tt.since)
		tt.want.Status, tt.want.ExitCode = api.ProcessExited, intPtr(0)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("since_offset=%d (-want +got):\n%s", tt.since, diff)
		}
	}
}

func TestProcessWatchdog(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	// Timed from before the start request: the process's second begins
	// after it, so the kill comes at least a second later however late the
	// start's answer arrives (timed from the answer, a loaded run saw the
	// kill 424 ms later).
	start := time.Now()
	id := startProcess(t, url, "echo started; sleep 30", 1)
	got := waitProcess(t, url, id, 10*time.Second)
	if got.Status != api.ProcessKilled || got.ExitCode == nil || *got.ExitCode != 128+9 || got.StdoutChunk != "started\n" {
		t.Errorf("after max runtime: %+v, want killed with 137 and the output kept", got)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("killed %s after the start request, before its max runtime of 1s", d)
	}
}

// TestProcessStopGrace: a process that ends on SIGTERM is not kept for the
// grace period, one that ignores it is killed after it. The first runs
// with a grace of ten minutes, so that waiting it out shows however loaded
// the machine is (a 1.5 s bound on its stop could fail under CI's load).
func TestProcessStopGrace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, command string
		wantCode      int
		grace         time.Duration
		slow          bool // must take the grace period
	}{
		{"ends on SIGTERM", "echo ready; sleep 30", 128 + 15, 10 * time.Minute, false},
		{"ignores SIGTERM", "trap '' TERM; echo ready; sleep 30", 128 + 9, 1500 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			grace := tt.grace
			url, _ := newToolServer(t, Options{Tools: ToolLimits{ProcessStopGrace: grace}})
			id := startProcess(t, url, tt.command, 60)
			for processOutput(t, url, id, 0).StdoutChunk == "" { // the trap is set once it printed
				time.Sleep(10 * time.Millisecond)
			}
			start := time.Now()
			var got api.ProcessStopResult
			doJSON(t, http.MethodPost, url+"/process/"+id+"/stop", nil, http.StatusOK, &got)
			took := time.Since(start)
			if diff := cmp.Diff(api.ProcessStopResult{Status: api.ProcessStopped, ExitCode: intPtr(tt.wantCode)}, got); diff != "" {
				t.Errorf("stop (-want +got):\n%s", diff)
			}
			if tt.slow && took < grace {
				t.Errorf("stop took %s, less than the grace of %s", took, grace)
			}
			if !tt.slow && took >= grace {
				t.Errorf("stop took %s, want less than the grace of %s", took, grace)
			}
			// Stopping again answers with the same end.
			doJSON(t, http.MethodPost, url+"/process/"+id+"/stop", nil, http.StatusOK, &got)
			if got.Status != api.ProcessStopped {
				t.Errorf("second stop: status %q", got.Status)
			}
		})
	}
}

func TestProcessInput(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	id := startProcess(t, url, "cat", 60)
	var res api.ProcessInputResult
	doJSON(t, http.MethodPost, url+"/process/"+id+"/input", api.ProcessInputRequest{Data: "hello\n"}, http.StatusOK, &res)
	if res.BytesWritten != 6 {
		t.Errorf("bytes_written = %d, want 6", res.BytesWritten)
	}
	deadline := time.Now().Add(10 * time.Second)
	for processOutput(t, url, id, 0).StdoutChunk != "hello\n" {
		if time.Now().After(deadline) {
			t.Fatalf("cat did not echo: %+v", processOutput(t, url, id, 0))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// readEvents reads events and comments from a stream until it ends.
func readEvents(t testing.TB, sc *bufio.Scanner, each func(sseEvent)) {
	t.Helper()
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				each(ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ": "):
			each(sseEvent{name: "comment", data: line[2:]})
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		}
	}
}

func TestProcessStream(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{KeepAlive: 100 * time.Millisecond}})
	id := startProcess(t, url, "echo one; sleep 1; echo two; exit 2", 60)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/process/"+id+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
	var output strings.Builder
	var exit *api.ProcessEvent
	keepAlives := 0
	readEvents(t, bufio.NewScanner(resp.Body), func(ev sseEvent) {
		if ev.name == "comment" {
			keepAlives++
			return
		}
		var pe api.ProcessEvent
		if err := json.Unmarshal([]byte(ev.data), &pe); err != nil {
			t.Fatalf("event data %q: %v", ev.data, err)
		}
		if pe.Type != ev.name {
			t.Errorf("event %q carries type %q", ev.name, pe.Type)
		}
		switch pe.Type {
		case api.ProcessEventOutput:
			if output.Len() == 0 && processOutput(t, url, id, 0).Status != api.ProcessRunning {
				t.Errorf("first output arrived only after the process ended; want it pushed as written")
			}
			output.WriteString(pe.StdoutChunk)
			if pe.NextOffset != int64(output.Len()) {
				t.Errorf("next_offset %d after %q", pe.NextOffset, output.String())
			}
		case api.ProcessEventExit:
			exit = &pe
		}
	})
	if output.String() != "one\ntwo\n" {
		t.Errorf("streamed output %q, want one and two", output.String())
	}
	if diff := cmp.Diff(&api.ProcessEvent{Type: api.ProcessEventExit, Status: api.ProcessExited, ExitCode: intPtr(2)}, exit); diff != "" {
		t.Errorf("exit event (-want +got):\n%s", diff)
	}
	if keepAlives == 0 {
		t.Errorf("no keep-alive comment during a 1s pause with a 100ms keep-alive")
	}

	// A stream of a finished process replays from the offset and ends at once.
	status, body := call(t, http.MethodGet, url+"/process/"+id+"/stream?since_offset=4", authed, "")
	want := "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"two\\n\",\"next_offset\":8}\n\n" +
		"event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\",\"exit_code\":2}\n\n"
	if status != 200 || string(body) != want {
		t.Errorf("stream of a finished process = %d\n%s\nwant\n%s", status, body, want)
	}
}

func TestRing(t *testing.T) {
	t.Parallel()
	r := newRing(8)
	type read struct {
		since     int64
		want      string
		next      int64
		truncated bool
	}
	steps := []struct {
		write string
		reads []read
	}{
		{"abc", []read{{0, "abc", 3, false}, {2, "c", 3, false}, {5, "", 3, false}}},
		{"defgh", []read{{0, "abcdefgh", 8, false}}},
		{"ij", []read{{0, "cdefghij", 10, true}, {2, "cdefghij", 10, false}, {9, "j", 10, false}}},
		{"0123456789ABC", []read{{0, "56789ABC", 23, true}}}, // larger than the ring: its tail is kept
	}
	for _, s := range steps {
		if _, err := r.Write([]byte(s.write)); err != nil {
			t.Fatal(err)
		}
		for _, rd := range s.reads {
			got, next, truncated, _ := r.since(rd.since)
			if string(got) != rd.want || next != rd.next || truncated != rd.truncated {
				t.Errorf("after %q: since(%d) = %q, %d, %v; want %q, %d, %v",
					s.write, rd.since, got, next, truncated, rd.want, rd.next, rd.truncated)
			}
		}
	}
}

func TestProcessTableEvictsOldestFinished(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{ProcessTable: 2}})
	running := startProcess(t, url, "sleep 30", 60)
	first := startProcess(t, url, "true", 60)
	waitProcess(t, url, first, 10*time.Second)
	second := startProcess(t, url, "true", 60)
	waitProcess(t, url, second, 10*time.Second)
	third := startProcess(t, url, "true", 60) // over the cap: the oldest finished one goes

	var list api.ProcessList
	doJSON(t, http.MethodGet, url+"/process", nil, http.StatusOK, &list)
	var ids []string
	for _, p := range list.Processes {
		ids = append(ids, p.ProcessID)
	}
	if diff := cmp.Diff([]string{running, third}, ids); diff != "" {
		t.Errorf("listed after eviction (-want +got):\n%s", diff)
	}
	doJSON(t, http.MethodGet, url+"/process/"+first+"/output", nil, http.StatusNotFound, nil)
}

// TestProcessStartDefaultRuntime: a start without max_runtime_seconds
// takes DefaultProcessRuntime instead of being refused (issue 19 finding 9).
func TestProcessStartDefaultRuntime(t *testing.T) {
	t.Parallel()
	url, h := newToolServer(t, Options{})
	status, body := call(t, "POST", url+"/process/start", authed, `{"command":"sleep 30"}`)
	if status != http.StatusCreated {
		t.Fatalf("start without max_runtime_seconds = %d %s, want 201", status, body)
	}
	var got api.ProcessStarted
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	p, err := h.sess.procs.get(got.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	if p.maxRuntime != api.DefaultProcessRuntime*time.Second {
		t.Errorf("max runtime %v, want %ds", p.maxRuntime, api.DefaultProcessRuntime)
	}
}

// TestProcessOutputTailToASlowReader: a background process's output that is
// still in the pipe when the grace after its exit runs out is kept, not cut
// by the read deadline (the interactive exec lost its tail so, see
// TestInteractiveOutputToASlowClient). The reader, once, waits twice the
// grace before keeping what it read: the command writes the rest into the
// pipe meanwhile and exits, and the rest is read after the grace.
func TestProcessOutputTailToASlowReader(t *testing.T) {
	t.Parallel()
	const size = 64<<10 + 17
	var once sync.Once
	url, _ := newToolServer(t, Options{
		Tools: ToolLimits{ProcessOutputBytes: 1 << 20},
		// Longer than the grace and the drain together: a reader the
		// scheduler leaves this long (a loaded host) still gets the tail.
		slowOutput: func() { once.Do(func() { time.Sleep(pipeGrace + 2*pipeDrain) }) },
	})
	id := startProcess(t, url, fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", size), 30)
	out := waitProcess(t, url, id, 30*time.Second)
	if out.NextOffset != size || strings.Count(out.StdoutChunk, "x") != size {
		t.Errorf("kept %d bytes (offset %d) of the %d written; want all", len(out.StdoutChunk), out.NextOffset, size)
	}
	if out.Status != api.ProcessExited || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("status %q, exit %v; want exited 0", out.Status, out.ExitCode)
	}
}

// TestProcessOutputHeldOutsideTheGroup: a child that left the process's
// group and keeps the output pipe open cannot hold the process "running":
// once the shell exits the pipe is drained for a bounded time and closed,
// and what was written before is kept.
func TestProcessOutputHeldOutsideTheGroup(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	marker := fmt.Sprintf("%d", 100000+time.Now().UnixNano()%100000)
	t.Cleanup(func() { _ = exec.Command("pkill", "-f", "sleep "+marker).Run() })
	id := startProcess(t, url, "setsid sleep "+marker+" & echo before-exit", 30)
	out := waitProcess(t, url, id, 20*time.Second)
	if out.Status != api.ProcessExited || !strings.Contains(out.StdoutChunk, "before-exit") {
		t.Errorf("status %q, output %q; want exited with the output kept", out.Status, out.StdoutChunk)
	}
}
