package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// The agent tools take a bound client as their sandbox, every optional
// capability included; boxkite-mcp and the server rely on it.
var _ interface {
	tools.Sandbox
	tools.Presenter
	tools.Interpreter
	tools.Processes
	tools.LanguageServers
} = (*client.Sandbox)(nil)

const (
	pidA = "proc_aaaa1111aaaa1111aaaa1111aaaa1111"
	pidB = "proc_aaaa2222aaaa2222aaaa2222aaaa2222"
)

func processRoutes() map[string]http.HandlerFunc {
	zero := 0
	started := time.Now().Add(-90 * time.Second)
	return map[string]http.HandlerFunc{
		"POST /processes": replyJSON(201, api.ProcessStarted{ProcessID: pidA, Status: api.ProcessRunning}),
		"GET /processes": replyJSON(200, api.ProcessList{Processes: []api.ProcessInfo{
			{ProcessID: pidA, Command: "python3 -m http.server", Status: api.ProcessRunning, StartedAt: started},
			{ProcessID: pidB, Command: "make\n  test", Status: api.ProcessExited, StartedAt: started, ExitCode: &zero},
		}}),
		"POST /processes/{pid}/stop": replyJSON(200, api.ProcessStopResult{Status: api.ProcessStopped, ExitCode: ptrTo(-15)}),
		"POST /processes/kill-all":   replyJSON(200, api.KillAllResult{Killed: 1}),
		"GET /processes/{pid}/output": replyJSON(200, api.ProcessOutput{
			Status: api.ProcessRunning, StdoutChunk: "serving\n", NextOffset: 8, Truncated: true,
		}),
		"GET /processes/{pid}/stream": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\\n\",\"next_offset\":2}\n\n")
			fmt.Fprint(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"b\\n\",\"next_offset\":4}\n\n")
			fmt.Fprint(w, "event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\",\"exit_code\":0}\n\n")
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestProcessCommands(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      result
		wantCalls []string
	}{
		{
			name:      "exec -b",
			args:      []string{"exec", "-b", "--max-runtime", "2h", "--cwd", "/workspace/app", "-e", "B=2", "-e", "A=x y", "--", "python3", "-m", "http.server"},
			want:      result{stdout: pidA + "\n"},
			wantCalls: []string{`POST /processes {"command":"cd /workspace/app \u0026\u0026 export A='x y' B=2 \u0026\u0026 python3 -m http.server","max_runtime_seconds":7200}`},
		},
		{
			name: "exec -b rejects --timeout",
			args: []string{"exec", "-b", "--timeout", "5s", "--", "sleep", "9"},
			want: result{code: exitUsage, stderr: "error: --timeout does not apply with -b\nhint: limit a background process with --max-runtime\n"},
		},
		{
			name: "exec -b caps --max-runtime",
			args: []string{"exec", "-b", "--max-runtime", "5h", "--", "sleep", "9"},
			want: result{code: exitUsage, stderr: "error: --max-runtime must be between 1s and 4h, got 5h\nhint: run 'boxkite exec --help' for usage\n"},
		},
		{
			name:      "kill by prefix",
			args:      []string{"kill", "aaaa1"},
			want:      result{stderr: "stopped " + pidA + ", exit code -15\n"},
			wantCalls: []string{"GET /processes", "POST /processes/" + pidA + "/stop"},
		},
		{
			name:      "kill by whole id needs no lookup",
			args:      []string{"kill", pidB},
			want:      result{stderr: "stopped " + pidB + ", exit code -15\n"},
			wantCalls: []string{"POST /processes/" + pidB + "/stop"},
		},
		{
			name:      "kill ambiguous",
			args:      []string{"kill", "proc_aaaa"},
			want:      result{code: exitUsage, stderr: `error: "proc_aaaa" matches 2 processes: ` + pidA + ", " + pidB + "\nhint: use more of the id\n"},
			wantCalls: []string{"GET /processes"},
		},
		{
			name:      "kill unknown",
			args:      []string{"kill", "ffff"},
			want:      result{code: exitNotFound, stderr: "error: process ffff not found in sandbox sb-1\nhint: list processes with 'boxkite ps -s sb-1'\n"},
			wantCalls: []string{"GET /processes"},
		},
		{
			name:      "kill --all",
			args:      []string{"kill", "--all"},
			want:      result{stderr: "stopped 1 process\n"},
			wantCalls: []string{"POST /processes/kill-all"},
		},
		{
			name: "kill needs ids or --all",
			args: []string{"kill"},
			want: result{code: exitUsage, stderr: "error: give the processes to stop, or --all\nhint: run 'boxkite kill --help' for usage\n"},
		},
		{
			name:      "logs",
			args:      []string{"logs", "aaaa2"},
			want:      result{stdout: "serving\n", stderr: "(earlier output was dropped; this is the newest the sandbox kept)\n"},
			wantCalls: []string{"GET /processes", "GET /processes/" + pidB + "/output?since_offset=0"},
		},
		{
			name:      "logs -f",
			args:      []string{"logs", "-f", pidA},
			want:      result{stdout: "a\nb\n"},
			wantCalls: []string{"GET /processes/" + pidA + "/stream?since_offset=0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSandbox{}
			f.serve(t, processRoutes())
			got := runCLI(t, "", tt.args...)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("boxkite %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
			}
			if diff := cmp.Diff(tt.wantCalls, f.calls); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPsTable(t *testing.T) {
	f := &fakeSandbox{}
	f.serve(t, processRoutes())
	got := runCLI(t, "", "ps")
	want := "ID                                     STATUS   EXIT  AGE  COMMAND\n" +
		pidA + "  running  -     1m   python3 -m http.server\n" +
		pidB + "  exited   0     1m   make test\n"
	if got.code != 0 || got.stdout != want {
		t.Errorf("ps: exit %d\n%s\nwant\n%s", got.code, got.stdout, want)
	}
	got = runCLI(t, "", "ps", "--json")
	var list api.ProcessList
	if err := json.Unmarshal([]byte(got.stdout), &list); err != nil || len(list.Processes) != 2 {
		t.Errorf("ps --json = %s (%v), want the API's process list", got.stdout, err)
	}
}

// TestAttachRelay drives attach against a fake takeover endpoint: the
// initial keystrokes reach the terminal, Ctrl-] detaches without sending
// itself, and a shell that exits ends attach too.
func TestAttachRelay(t *testing.T) {
	typed := make(chan string, 10)
	f := &fakeSandbox{}
	f.serve(t, map[string]http.HandlerFunc{
		"GET /takeover": func(w http.ResponseWriter, r *http.Request) {
			conn, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer conn.CloseNow()
			ctx := r.Context()
			conn.Write(ctx, websocket.MessageBinary, []byte("$ "))
			for {
				typ, b, err := conn.Read(ctx)
				if err != nil {
					typed <- "closed"
					return
				}
				if typ == websocket.MessageText {
					continue
				}
				typed <- string(b)
				// What the sidecar says as the shell exits: the status
				// (a signal's 128+N) in an exit frame before the close,
				// or, older than that frame, the close alone.
				frames := map[string]string{
					"exit 3\r":  `{"type":"exit","exit_code":3}`,
					"kill -9\r": `{"type":"exit","exit_code":137,"signal":9}`,
					"exit 0\r":  `{"type":"exit","exit_code":0}`,
					"exit\r":    "",
				}
				if frame, ok := frames[string(b)]; ok {
					if frame != "" {
						conn.Write(ctx, websocket.MessageText, []byte(frame))
					}
					conn.Close(websocket.StatusNormalClosure, "shell exited")
					return
				}
			}
		},
	})

	// stdin says it is a terminal (attach refuses anything else; see
	// below), but is a reader, so no raw mode is set.
	var out1, err1 strings.Builder
	code1 := Execute(context.Background(), NewRoot(NewApp(IO{In: strings.NewReader("echo hi\r\x1dignored"), InTTY: true, Out: &out1, ErrOut: &err1}, "test")), []string{"attach"})
	got := result{out1.String(), err1.String(), code1}
	if got.code != 0 || !strings.HasSuffix(got.stderr, "detached\n") {
		t.Errorf("attach then Ctrl-]: exit %d, stderr %q; want 0 and detached", got.code, got.stderr)
	}
	if s := collect(typed, 2); s != "echo hi\r|closed" {
		t.Errorf("the terminal got %q, want the keystrokes before Ctrl-] and a close", s)
	}

	// The shell exiting ends attach, with the shell's status, as ssh
	// does. Stdin is a pipe that stays open, so only the remote close can
	// end it.
	for _, c := range []struct {
		name, typed string
		wantCode    int
		wantSaid    string
	}{
		{name: "exit 3", typed: "exit 3\r", wantCode: 3, wantSaid: "the shell exited (exit code 3)\n"},
		{name: "a signal's 128+N", typed: "kill -9\r", wantCode: 137, wantSaid: "the shell was killed by signal 9 (exit code 137)\n"},
		{name: "exit 0", typed: "exit 0\r", wantCode: 0, wantSaid: "the shell exited\n"},
		{name: "a sidecar older than the exit frame", typed: "exit\r", wantCode: 0, wantSaid: "the shell exited\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go io.WriteString(pw, c.typed)
			var out, errOut strings.Builder
			code := Execute(context.Background(), NewRoot(NewApp(IO{In: pr, InTTY: true, Out: &out, ErrOut: &errOut}, "test")), []string{"attach", "--read-only=false"})
			if code != c.wantCode || !strings.HasSuffix(errOut.String(), c.wantSaid) || strings.Contains(errOut.String(), "error:") || out.String() != "$ " {
				t.Errorf("attach until the shell exits: exit %d, stdout %q, stderr %q; want exit %d and %q", code, out.String(), errOut.String(), c.wantCode, c.wantSaid)
			}
			if s := collect(typed, 1); s != c.typed {
				t.Errorf("the terminal got %q, want %q", s, c.typed)
			}
		})
	}

	// Without a terminal, attach refuses (exit 2, a hint) instead of
	// reading stdin to its end and exiting 0.
	got = runCLI(t, "echo hi\r", "attach")
	if got.code != exitUsage || !strings.Contains(got.stderr, "hint: run it from a terminal") {
		t.Errorf("attach with piped stdin: exit %d, stderr %q; want 2 and a hint", got.code, got.stderr)
	}
}

func collect(ch <-chan string, n int) string {
	var got []string
	for range n {
		select {
		case s := <-ch:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			return strings.Join(append(got, "(timeout)"), "|")
		}
	}
	return strings.Join(got, "|")
}

func TestToolsExport(t *testing.T) {
	isolate(t)
	for _, format := range tools.Formats() {
		got := runCLI(t, "", "tools", "export", "--format", format, "--tools", "default,lsp")
		if got.code != 0 {
			t.Fatalf("tools export --format %s: exit %d: %s", format, got.code, got.stderr)
		}
		var v any
		if err := json.Unmarshal([]byte(got.stdout), &v); err != nil {
			t.Fatalf("tools export --format %s printed invalid JSON: %v", format, err)
		}
		want, _ := tools.Export(append(tools.Default(), tools.LSP()...), format)
		if got.stdout != string(want) {
			t.Errorf("tools export --format %s differs from tools.Export", format)
		}
	}
	all := runCLI(t, "", "tools", "export", "--format", "mcp", "--tools", "all,git")
	want, _ := tools.Export(tools.All(), "mcp")
	if all.stdout != string(want) {
		t.Error("--tools all,git is not every tool once")
	}
	for _, args := range [][]string{
		{"tools", "export"},
		{"tools", "export", "--format", "xml"},
		{"tools", "export", "--format", "mcp", "--tools", "nope"},
	} {
		if got := runCLI(t, "", args...); got.code != exitUsage {
			t.Errorf("boxkite %s: exit %d, want %d", strings.Join(args, " "), got.code, exitUsage)
		}
	}
}

func TestLogCommand(t *testing.T) {
	f := &fakeSandbox{}
	code := 0
	f.serve(t, map[string]http.HandlerFunc{
		"GET /log": replyJSON(200, api.LogPage{Entries: []api.LogEntry{{
			Source: api.LogSourceAgent, Operation: "exec", ExitCode: &code, DurationMS: 1500,
			Detail:    json.RawMessage(`{"command": "echo hi"}`),
			StartedAt: mustParse("2026-01-02T03:04:05Z"),
		}}, Limit: 1, Offset: 3, Total: 10}),
	})
	got := runCLI(t, "", "log", "--limit", "1", "--offset", "3")
	if got.code != 0 || !strings.Contains(got.stdout, "exec       0     1.5s      {\"command\":\"echo hi\"}") ||
		got.stderr != "entries 4-4 of 10; next: --offset 4\n" {
		t.Errorf("log: exit %d\nstdout:\n%s\nstderr: %s", got.code, got.stdout, got.stderr)
	}
	if diff := cmp.Diff([]string{"GET /log?limit=1&offset=3"}, f.calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := runCLI(t, "", "log", "--limit", "0"); got.code != exitUsage {
		t.Errorf("log --limit 0: exit %d, want %d", got.code, exitUsage)
	}
}

// TestAttachSandboxDestroyed: a sandbox destroyed under an attached
// terminal closes the attachment with api.CloseSandboxEnded; attach says
// so, with a hint, and exits 1, where it said "the shell exited" (exit 0).
// A sandbox paused under it (reason "sandbox <id> was paused") is told to
// be resumed, not replaced.
func TestAttachSandboxDestroyed(t *testing.T) {
	cases := []struct{ reason, want string }{
		{"sandbox sb-1 was destroyed while the call ran", "error: sandbox sb-1 was destroyed while the call ran\nhint: create a new one"},
		{"sandbox sb-1 was paused", "error: sandbox sb-1 was paused\nhint: resume it with 'boxkite session resume sb-1', then attach again"},
	}
	for _, c := range cases {
		f := &fakeSandbox{}
		f.serve(t, map[string]http.HandlerFunc{
			"GET /takeover": func(w http.ResponseWriter, r *http.Request) {
				conn, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer conn.CloseNow()
				conn.Close(api.CloseSandboxEnded, c.reason)
			},
		})
		pr, pw := io.Pipe()
		var out, errOut strings.Builder
		code := Execute(context.Background(), NewRoot(NewApp(IO{In: pr, InTTY: true, Out: &out, ErrOut: &errOut}, "test")), []string{"attach"})
		pw.Close()
		if code != exitError || !strings.Contains(errOut.String(), c.want) || strings.Contains(errOut.String(), "the shell exited") {
			t.Errorf("attach, closed with %q: exit %d, stderr %q; want %d and %q", c.reason, code, errOut.String(), exitError, c.want)
		}
	}
}

// TestLogsFollowPaused: 'logs -f' whose stream the server cuts because
// the sandbox was paused says so, with how to go on, instead of "read
// process stream: unexpected EOF" (session 20, state20); a stream cut
// otherwise is a cut connection, with its hint (TestConnectionCut).
func TestLogsFollowPaused(t *testing.T) {
	for _, status := range []string{api.StatusPaused, api.StatusActive} {
		t.Run(status, func(t *testing.T) {
			f := &fakeSandbox{}
			sb := api.Sandbox{ID: "sb-1", Status: status}
			if status == api.StatusPaused {
				sb.PausedWith = api.PauseFreeze
			}
			f.serve(t, map[string]http.HandlerFunc{
				"GET ": replyJSON(200, sb),
				"GET /processes/{pid}/stream": func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Content-Length", "1000") // promised, not sent: a cut stream
					fmt.Fprint(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\\n\",\"next_offset\":2}\n\n")
				},
			})
			got := runCLI(t, "", "logs", "-f", pidA)
			if got.code != exitError || got.stdout != "a\n" {
				t.Fatalf("logs -f = %+v, want the output so far and exit %d", got, exitError)
			}
			if status == api.StatusPaused {
				want := "error: follow output of " + pidA + ": sandbox sb-1 was paused (freeze); its output ends here\n" +
					"hint: resume it with 'boxkite session resume sb-1', then 'boxkite logs -f " + pidA + " -s sb-1'\n"
				if got.stderr != want {
					t.Errorf("stderr %q, want %q", got.stderr, want)
				}
				return
			}
			prefix := "error: follow output of " + pidA + ": GET /v1/sandboxes/{id}/processes/{pid}/stream: the connection to the boxkite server at "
			suffix := " was cut: unexpected EOF\nhint: " + cutHint + "\n"
			if !strings.HasPrefix(got.stderr, prefix) || !strings.HasSuffix(got.stderr, suffix) {
				t.Errorf("stderr %q, want %q…%q", got.stderr, prefix, suffix)
			}
		})
	}
}
