package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/client/api"
)

var authed = http.Header{api.HeaderSidecarToken: {testToken}}

// postExec runs one exec through srv and decodes a 200 result.
func postExec(t testing.TB, url, body string) api.ExecResult {
	t.Helper()
	status, b := call(t, http.MethodPost, url+"/exec", authed, body)
	if status != http.StatusOK {
		t.Fatalf("POST /exec %s = %d %s, want 200", body, status, b)
	}
	var res api.ExecResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return res
}

func jsonBody(t testing.TB, req api.ExecRequest) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ignoreTimingAndCounts leaves out what varies from run to run and the
// output counts, which wholeCounts and TestExecOutputCaps check.
var ignoreTimingAndCounts = cmpopts.IgnoreFields(api.ExecResult{}, "DurationMS", "ExecOutputInfo")

// wholeCounts checks the output counts of an exec that was not truncated.
func wholeCounts(t *testing.T, got api.ExecResult) {
	t.Helper()
	want := api.ExecOutputInfo{StdoutBytes: int64(len(got.Stdout)), StderrBytes: int64(len(got.Stderr)), OutputLimitBytes: api.DefaultExecOutput}
	if got.ExecOutputInfo != want {
		t.Errorf("output info %+v, want %+v", got.ExecOutputInfo, want)
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	srv, ws := newServer(t, Options{Token: testToken})
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  api.ExecRequest
		want api.ExecResult
	}{
		{"stdout and stderr apart", api.ExecRequest{Command: "echo out; echo err >&2"}, api.ExecResult{Stdout: "out\n", Stderr: "err\n"}},
		{"exit code", api.ExecRequest{Command: "echo bye; exit 3"}, api.ExecResult{ExitCode: 3, Stdout: "bye\n"}},
		{"killed by a signal", api.ExecRequest{Command: "kill -9 $$"}, api.ExecResult{ExitCode: 137}},
		{"stdin", api.ExecRequest{Command: "cat; echo", Stdin: "hello"}, api.ExecResult{Stdout: "hello\n"}},
		{"no stdin reads /dev/null", api.ExecRequest{Command: "cat; echo end"}, api.ExecResult{Stdout: "end\n"}},
		{"stdin left unread", api.ExecRequest{Command: "echo ok", Stdin: strings.Repeat("x", 1<<20)}, api.ExecResult{Stdout: "ok\n"}},
		{"default cwd is the workspace", api.ExecRequest{Command: "pwd"}, api.ExecResult{Stdout: ws + "\n"}},
		{"relative cwd", api.ExecRequest{Command: "pwd", Cwd: "sub"}, api.ExecResult{Stdout: ws + "/sub\n"}},
		{"absolute cwd in the workspace", api.ExecRequest{Command: "pwd", Cwd: ws + "/sub/../sub"}, api.ExecResult{Stdout: ws + "/sub\n"}},
		{"cwd /tmp", api.ExecRequest{Command: "pwd", Cwd: "/tmp"}, api.ExecResult{Stdout: "/tmp\n"}},
		{"safe env", api.ExecRequest{Command: `echo "$PATH|$HOME|$LANG|$XDG_CACHE_HOME"`}, api.ExecResult{Stdout: "/usr/local/bin:/usr/bin:/bin|" + ws + "|C.UTF-8|/tmp/.cache\n"}},
		{"request env", api.ExecRequest{Command: `echo "$FOO $_b1"`, Env: map[string]string{"FOO": "bar baz", "_b1": "x"}}, api.ExecResult{Stdout: "bar baz x\n"}},
		{"request env overrides the base", api.ExecRequest{Command: `echo "$HOME"`, Env: map[string]string{"HOME": "/tmp"}}, api.ExecResult{Stdout: "/tmp\n"}},
		{"sidecar env does not leak", api.ExecRequest{Command: `env | grep -c -i token || true`}, api.ExecResult{Stdout: "0\n"}},
		{"timeout in range", api.ExecRequest{Command: "echo quick", Timeout: 3600}, api.ExecResult{Stdout: "quick\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := postExec(t, srv.URL, jsonBody(t, tt.req))
			if diff := cmp.Diff(tt.want, got, ignoreTimingAndCounts); diff != "" {
				t.Errorf("exec %q (-want +got):\n%s", tt.req.Command, diff)
			}
			wholeCounts(t, got)
		})
	}
}

func TestExecRefuses(t *testing.T) {
	t.Parallel()
	srv, ws := newServer(t, Options{Token: testToken})
	if err := os.Symlink("/", filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
		wantMsg    string // a substring of the message
	}{
		{"not JSON", `{"command":`, 400, api.CodeBadRequest, "request body is not valid JSON"},
		{"wrong type", `{"command":"true","timeout":"5"}`, 422, api.CodeValidation, "timeout must be an integer"},
		{"empty command", `{"command":""}`, 422, api.CodeValidation, "command must not be empty"},
		{"blank command", `{"command":"  \n"}`, 422, api.CodeValidation, "command must not be empty"},
		{"no command", `{}`, 422, api.CodeValidation, "command must not be empty"},
		{"NUL in command", `{"command":"echo \u0000"}`, 422, api.CodeValidation, "NUL"},
		{"explicit timeout 0", `{"command":"true","timeout":0}`, 422, api.CodeValidation, "timeout must be between 1 and 3600 seconds, got 0"},
		{"negative timeout", `{"command":"true","timeout":-1}`, 422, api.CodeValidation, "got -1"},
		{"timeout too long", `{"command":"true","timeout":3601}`, 422, api.CodeValidation, "got 3601"},
		{"cwd climbs out", `{"command":"pwd","cwd":"../../../etc"}`, 400, api.CodeBadRequest, "Invalid path outside allowed roots: ../../../etc"},
		{"cwd absolute outside", `{"command":"pwd","cwd":"/etc"}`, 400, api.CodeBadRequest, "Invalid path outside allowed roots: /etc"},
		{"cwd root", `{"command":"pwd","cwd":"/"}`, 400, api.CodeBadRequest, "Invalid path outside allowed roots: /"},
		{"cwd through a planted symlink", `{"command":"pwd","cwd":"escape"}`, 400, api.CodeBadRequest, "Invalid path outside allowed roots: escape"},
		{"cwd below a planted symlink", `{"command":"pwd","cwd":"escape/etc"}`, 400, api.CodeBadRequest, "Invalid path outside allowed roots: escape/etc"},
		{"cwd missing", `{"command":"pwd","cwd":"nope"}`, 400, api.CodeBadRequest, "cwd does not exist: nope"},
		{"cwd a file", `{"command":"pwd","cwd":"file"}`, 400, api.CodeBadRequest, "cwd is not a directory: file"},
		{"env name pattern", `{"command":"true","env":{"1FOO":"x"}}`, 422, api.CodeValidation, `"1FOO"`},
		{"env name with dash", `{"command":"true","env":{"A-B":"x"}}`, 422, api.CodeValidation, `"A-B"`},
		{"env denied", `{"command":"true","env":{"LD_PRELOAD":"/x.so"}}`, 422, api.CodeValidation, "env variable LD_PRELOAD may not be set"},
		{"env denied any case", `{"command":"true","env":{"Path":"/x"}}`, 422, api.CodeValidation, "env variable Path may not be set"},
		{"env denied bash function", `{"command":"true","env":{"BASH_FUNC_ls":"x"}}`, 422, api.CodeValidation, "BASH_FUNC_ls"},
		{"env value with NUL", `{"command":"true","env":{"A":"\u0000"}}`, 422, api.CodeValidation, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := call(t, http.MethodPost, srv.URL+"/exec", authed, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("POST /exec %s = %d %s, want %d", tt.body, status, body, tt.wantStatus)
			}
			e := decodeError(t, body)
			if e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("POST /exec %s: error %+v, want code %q and a message containing %q", tt.body, e, tt.wantCode, tt.wantMsg)
			}
			if e.Hint == "" {
				t.Errorf("POST /exec %s: error %+v has no hint", tt.body, e)
			}
		})
	}
}

func TestExecAcceptsUnknownFields(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	got := postExec(t, srv.URL, `{"command":"echo hi","description":"greet","future_field":{"x":1}}`)
	if diff := cmp.Diff(api.ExecResult{Stdout: "hi\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec (-want +got):\n%s", diff)
	}
}

func TestExecTimeout(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	start := time.Now()
	got := postExec(t, srv.URL, `{"command":"echo early; sleep 30","timeout":1}`)
	elapsed := time.Since(start)
	want := api.ExecResult{ExitCode: api.ExitCodeTimeout, Stderr: "Command timed out after 1s", ExecOutputInfo: api.ExecOutputInfo{StopReason: api.StopReasonTimeout}}
	if diff := cmp.Diff(want, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec past its timeout (-want +got):\n%s", diff)
	}
	// Far from both the 1 s timeout, which a loaded CI machine (load
	// 20-40, race builds beside it) may overrun by seconds, and the 30 s
	// a command the kill did not end takes.
	if elapsed > 15*time.Second {
		t.Errorf("exec with timeout 1 took %v; the kill did not end it", elapsed)
	}
}

// TestExecOutputCaps: output past the cap is cut and counted, and the
// command runs on to its own end (issue 19 finding 4), unless the request
// asked for a stop at the cap, which then says why.
func TestExecOutputCaps(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	const mib = 1 << 20
	tests := []struct {
		name          string
		req           api.ExecRequest
		wantExit      int
		wantStdoutLen int
		wantStderrLen int
		wantInfo      api.ExecOutputInfo
	}{
		{
			"stdout over the cap runs on",
			api.ExecRequest{Command: "head -c 5242880 /dev/zero; echo after >&2"},
			0, mib, 6,
			api.ExecOutputInfo{Truncated: true, StdoutBytes: 5 * mib, StderrBytes: 6, OutputLimitBytes: mib},
		},
		{
			"stdout at the cap",
			api.ExecRequest{Command: "head -c 1048576 /dev/zero"},
			0, mib, 0,
			api.ExecOutputInfo{StdoutBytes: mib, OutputLimitBytes: mib},
		},
		{
			"stderr over the cap, exit code kept",
			api.ExecRequest{Command: "head -c 1200000 /dev/zero >&2; exit 3"},
			3, 0, mib,
			api.ExecOutputInfo{Truncated: true, StderrBytes: 1200000, OutputLimitBytes: mib},
		},
		{
			"a cap of the request's own",
			api.ExecRequest{Command: "seq 1 1000; echo done", MaxOutputBytes: 10},
			0, 10, 0,
			api.ExecOutputInfo{Truncated: true, StdoutBytes: 3898, OutputLimitBytes: 10},
		},
		{
			"stop at the cap",
			api.ExecRequest{Command: "head -c 3000000 /dev/zero; sleep 20", MaxOutputBytes: mib, OnOutputLimit: api.OutputLimitStop},
			137, mib, 0,
			api.ExecOutputInfo{Truncated: true, OutputLimitBytes: mib, StopReason: api.StopReasonOutputLimit},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := postExec(t, srv.URL, jsonBody(t, tt.req))
			if got.ExitCode != tt.wantExit || len(got.Stdout) != tt.wantStdoutLen || len(got.Stderr) != tt.wantStderrLen {
				t.Errorf("exec %q = exit %d, %d bytes stdout, %d bytes stderr; want %d, %d, %d",
					tt.req.Command, got.ExitCode, len(got.Stdout), len(got.Stderr), tt.wantExit, tt.wantStdoutLen, tt.wantStderrLen)
			}
			info := got.ExecOutputInfo
			if tt.wantInfo.StopReason != "" {
				// How much a killed command wrote before the kill landed varies.
				if info.StdoutBytes <= mib {
					t.Errorf("stdout_bytes %d, want past the cap", info.StdoutBytes)
				}
				info.StdoutBytes = 0
			}
			if info != tt.wantInfo {
				t.Errorf("output info %+v, want %+v", info, tt.wantInfo)
			}
		})
	}
}

func TestExecBackgroundChildDoesNotHold(t *testing.T) {
	t.Parallel()
	srv, ws := newServer(t, Options{Token: testToken})
	start := time.Now()
	got := postExec(t, srv.URL, `{"command":"sleep 30 & echo $! > bg.pid; echo done"}`)
	if elapsed := time.Since(start); elapsed > 15*time.Second { // held by the child: 30 s
		t.Errorf("exec with a background child took %v", elapsed)
	}
	if diff := cmp.Diff(api.ExecResult{Stdout: "done\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec (-want +got):\n%s", diff)
	}
	// The child held our pipes, so it was killed with its group.
	waitGone(t, readPID(t, filepath.Join(ws, "bg.pid")))
}

// TestExecOutputTailToALateWait: output a background child wrote while
// the exec's wait was not scheduled (a loaded host) for longer than the
// grace and the drain together is still read before the pipes go.
func TestExecOutputTailToALateWait(t *testing.T) {
	t.Parallel()
	srv, ws := newServer(t, Options{Token: testToken, slowKill: func() { time.Sleep(pipeDrain + 2*time.Second) }})
	got := postExec(t, srv.URL, `{"command":"(sleep 0.2; echo late; exec sleep 30) & echo $! > bg.pid; echo done"}`)
	if diff := cmp.Diff(api.ExecResult{Stdout: "done\nlate\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec (-want +got):\n%s", diff)
	}
	waitGone(t, readPID(t, filepath.Join(ws, "bg.pid")))
}

// TestExecOutputTailToALateReader: with the goroutine fallback's wait (no
// pidfd or epoll), output the shell wrote while a pipe's reader was not
// scheduled (a loaded host) for longer than the grace and the drain
// together is still read: the drain counts the reader's time in Read, not
// the wall clock's.
func TestExecOutputTailToALateReader(t *testing.T) {
	t.Parallel()
	var once sync.Once
	slow := func() { once.Do(func() { time.Sleep(pipeGrace + pipeDrain + time.Second) }) }
	srv, _ := newServer(t, Options{Token: testToken, goroutineWait: true, slowOutput: slow})
	got := postExec(t, srv.URL, `{"command":"echo first; sleep 0.2; echo tail"}`)
	if diff := cmp.Diff(api.ExecResult{Stdout: "first\ntail\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec (-want +got):\n%s", diff)
	}
}

func TestExecClientGoneKillsTheGroup(t *testing.T) {
	t.Parallel()
	srv, ws := newServer(t, Options{Token: testToken})
	clientGoneKills(t, srv.URL, `{"command":"sleep 60 & echo $! > pid; wait"}`, filepath.Join(ws, "pid"))
}

// clientGoneKills posts the exec body to the sidecar at url and, once the
// command has written a background child's pid to pidFile, goes away: the
// child dies with the exec's process group.
func clientGoneKills(t *testing.T, url, body, pidFile string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/exec", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	pid := waitPID(t, pidFile)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("request error = %v, want context.Canceled", err)
	}
	waitGone(t, pid)
}

// waitPID waits for a command to write its pid file, and reads it.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return readPID(t, path)
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the command never wrote its pid")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// waitGone waits until pid no longer exists. The sleep it watches is
// orphaned once the shell dies, so init (or a subreaper) reaps it; a zombie
// counts as gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if syscall.Kill(pid, 0) == syscall.ESRCH || isZombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// event is one streamed line and when it arrived.
type event struct {
	api.ExecEvent
	at time.Time
}

func postStream(t *testing.T, url, body string) []event {
	t.Helper()
	return postStreamFunc(t, url, body, nil)
}

// postStreamFunc is postStream calling on, when set, with each event as
// it arrives, before the next is read.
func postStreamFunc(t *testing.T, url, body string, on func(api.ExecEvent)) []event {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/exec", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	req.Header.Set("Accept", "application/json;q=0.5, "+api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != api.ContentTypeNDJSON {
		t.Fatalf("POST /exec streamed = %d %q, want 200 %q", resp.StatusCode, ct, api.ContentTypeNDJSON)
	}
	var events []event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var e api.ExecEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		if e.Type == api.EventExit && !strings.Contains(sc.Text(), `"exit_code":`) {
			t.Errorf("exit event %s has no exit_code", sc.Bytes())
		}
		events = append(events, event{e, time.Now()})
		if on != nil {
			on(e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read stream: %v", err)
	}
	return events
}

// counts is the output info of an exec that was not truncated.
func counts(stdout, stderr, limit int64) api.ExecOutputInfo {
	return api.ExecOutputInfo{StdoutBytes: stdout, StderrBytes: stderr, OutputLimitBytes: limit}
}

// byStream orders exec events stdout first, then stderr, then the rest,
// keeping the order within each: stdout and stderr are two pipes read
// side by side, so which of them is read first is not the sidecar's to
// promise (a command writing both gets them in either order), while the
// order of each stream and the exit event's place at the end are.
func byStream(events []api.ExecEvent) []api.ExecEvent {
	rank := map[string]int{api.EventStdout: 0, api.EventStderr: 1}
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b api.ExecEvent) int {
		ra, ok := rank[a.Type]
		if !ok {
			ra = 2
		}
		rb, ok := rank[b.Type]
		if !ok {
			rb = 2
		}
		return ra - rb
	})
	return out
}

func TestExecStream(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	tests := []struct {
		name string
		body string
		want []api.ExecEvent
	}{
		{
			"output then exit",
			`{"command":"echo one; sleep 0.3; echo two >&2; exit 3"}`,
			[]api.ExecEvent{{Type: "stdout", Data: "one\n"}, {Type: "stderr", Data: "two\n"}, {Type: "exit", ExitCode: 3, ExecOutputInfo: counts(4, 4, api.DefaultExecOutput)}},
		},
		{
			"timeout",
			// 3 s: the timer starts before the spawn, and "early" must
			// come out before it ends on a loaded machine.
			`{"command":"echo early; sleep 30","timeout":3}`,
			[]api.ExecEvent{{Type: "stdout", Data: "early\n"}, {Type: "stderr", Data: "Command timed out after 3s"}, {Type: "exit", ExitCode: 124, ExecOutputInfo: stopped(counts(6, 0, api.DefaultExecOutput), api.StopReasonTimeout)}},
		},
		{
			"a rune split across writes stays whole",
			`{"command":"printf '\\303'; sleep 0.2; printf '\\251\\n'"}`,
			[]api.ExecEvent{{Type: "stdout", Data: "é\n"}, {Type: "exit", ExecOutputInfo: counts(3, 0, api.DefaultExecOutput)}},
		},
		{
			"truncated: the stream stops at the cap, the exit event says so",
			`{"command":"seq 1 1000; echo done >&2","max_output_bytes":10}`,
			[]api.ExecEvent{
				{Type: "stdout", Data: "1\n2\n3\n4\n5\n"},
				{Type: "stderr", Data: "done\n"},
				{Type: "exit", ExecOutputInfo: api.ExecOutputInfo{Truncated: true, StdoutBytes: 3893, StderrBytes: 5, OutputLimitBytes: 10}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events := postStream(t, srv.URL, tt.body)
			got := make([]api.ExecEvent, len(events))
			for i, e := range events {
				got[i] = e.ExecEvent
				got[i].DurationMS = 0
			}
			if diff := cmp.Diff(byStream(tt.want), byStream(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecStreamFlushesAsOutputHappens(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken})
	// The command prints "second" only once the test has seen "first": a
	// sidecar that held output back until the end would leave it waiting
	// (for at most 20 s) and send both in one event.
	gate := filepath.Join(t.TempDir(), "go")
	cmd := fmt.Sprintf(`echo first; i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo second`, gate)
	body, _ := json.Marshal(map[string]any{"command": cmd, "timeout": 60})
	events := postStreamFunc(t, srv.URL, string(body), func(e api.ExecEvent) {
		if e.Type == api.EventStdout && e.Data == "first\n" {
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	var got []string
	for _, e := range events {
		got = append(got, e.Type+":"+e.Data)
	}
	want := []string{"stdout:first\n", "stdout:second\n", "exit:"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestSplitUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, whole, partial string
	}{
		{"", "", ""},
		{"abc", "abc", ""},
		{"aé", "aé", ""},
		{"a\xc3", "a", "\xc3"},
		{"a\xe2\x82", "a", "\xe2\x82"},         // 2 of 3 bytes of €
		{"a\xf0\x9f\x98", "a", "\xf0\x9f\x98"}, // 3 of 4 bytes of 😀
		{"a\xff", "a\xff", ""},                 // invalid, not incomplete
		{"\x82", "\x82", ""},                   // a lone continuation byte
	}
	for _, tt := range tests {
		whole, partial := splitUTF8([]byte(tt.in))
		if string(whole) != tt.whole || string(partial) != tt.partial {
			t.Errorf("splitUTF8(%q) = %q, %q; want %q, %q", tt.in, whole, partial, tt.whole, tt.partial)
		}
	}
}

func TestExecRunAs(t *testing.T) {
	t.Parallel()
	needRoot(t, "switching to uid 1001")
	srv, ws := newServer(t, Options{Token: testToken, Workspace: traversableTempDir(t), RunAs: &RunAs{UID: 1001, GID: 1001}})
	got := postExec(t, srv.URL, `{"command":"id -u; id -g; id -G; touch made"}`)
	if diff := cmp.Diff(api.ExecResult{Stdout: "1001\n1001\n1001\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec as 1001 (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(filepath.Join(ws, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1001 || st.Gid != 1001 {
		t.Errorf("file made by the command is owned by %d:%d, want 1001:1001", st.Uid, st.Gid)
	}
}

func TestExecNestedUserNS(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken, Workspace: traversableTempDir(t), RunAs: &RunAs{UID: 1001, GID: 1001, NestedUserNS: true}})
	got := postExec(t, srv.URL, `{"command":"id -u; id -g"}`)
	if diff := cmp.Diff(api.ExecResult{Stdout: "1001\n1001\n"}, got, ignoreTimingAndCounts); diff != "" {
		t.Errorf("exec in a nested user namespace (-want +got):\n%s", diff)
	}
}

// traversableTempDir returns a workspace another uid can enter and write:
// t.TempDir and its parent are 0700.
func traversableTempDir(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chmod(filepath.Dir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	return ws
}

func BenchmarkExec(b *testing.B) {
	srv, _ := newServer(b, Options{Token: testToken, Log: slog.New(slog.DiscardHandler)})
	body := `{"command":"true"}`
	for b.Loop() {
		postExec(b, srv.URL, body)
	}
}

func TestExecSpawnError(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Token: testToken, Workspace: "/nonexistent-boxkite-workspace"})
	got := postExec(t, srv.URL, `{"command":"true"}`)
	if got.ExitCode != 1 || got.Stdout != "" || !strings.Contains(got.Stderr, "no such file or directory") {
		t.Errorf("exec that cannot start = %+v, want exit 1 and the reason in stderr", got)
	}
	events := postStream(t, srv.URL, `{"command":"true"}`)
	if len(events) != 2 || events[0].Type != api.EventStderr || events[1].Type != api.EventExit || events[1].ExitCode != 1 {
		t.Errorf("streamed exec that cannot start = %+v, want a stderr event and exit 1", events)
	}
}

// stopped is o with its stop reason set.
func stopped(o api.ExecOutputInfo, reason string) api.ExecOutputInfo {
	o.StopReason = reason
	return o
}

// TestCwdRefusalHints: a cwd that is not there, or is a file, was refused
// with no hint, so only the CLI (which adds its own) said what to do; and
// an interactive exec (the E2B API's commands.run) called a missing cwd
// "not a directory". Both execs now say which it is, with a hint.
func TestCwdRefusalHints(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := newServer(t, Options{Token: testToken, Workspace: ws})
	h := New(Options{Workspace: ws, Log: slog.New(slog.DiscardHandler)})
	for _, tt := range []struct {
		cwd  string
		want *api.Error
	}{
		{"nope", &api.Error{Code: api.CodeBadRequest, Message: "cwd does not exist: nope", Hint: missingCwdHint}},
		{"a/b", &api.Error{Code: api.CodeBadRequest, Message: "cwd does not exist: a/b", Hint: missingCwdHint}},
		{"file", &api.Error{Code: api.CodeBadRequest, Message: "cwd is not a directory: file", Hint: "give a directory, not a file; a relative cwd starts at /workspace"}},
	} {
		body, _ := json.Marshal(api.ExecRequest{Command: "pwd", Cwd: tt.cwd})
		status, got := call(t, http.MethodPost, srv.URL+"/exec", authed, string(body))
		if status != http.StatusBadRequest {
			t.Errorf("POST /exec cwd %q = %d %s, want 400", tt.cwd, status, got)
		}
		if diff := cmp.Diff(tt.want, decodeError(t, got), cmpopts.IgnoreFields(api.Error{}, "Status", "RequestID")); diff != "" {
			t.Errorf("POST /exec cwd %q (-want +got):\n%s", tt.cwd, diff)
		}
		_, err := h.interactiveCmd(api.InteractiveRequest{Command: "pwd", Cwd: tt.cwd})
		if diff := cmp.Diff(tt.want, err, cmpopts.IgnoreFields(api.Error{}, "Status", "RequestID")); diff != "" {
			t.Errorf("interactive cwd %q (-want +got):\n%s", tt.cwd, diff)
		}
	}
}
