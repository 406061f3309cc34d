package cli

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func TestShellJoin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"python3", "-c", "print(1+1)"}, "python3 -c 'print(1+1)'"},
		{[]string{"echo", "it's"}, `echo 'it'\''s'`},
		{[]string{"ls", "-la", "/workspace/a.txt"}, "ls -la /workspace/a.txt"},
		{[]string{"printf", ""}, "printf ''"},
		{[]string{"sh", "-c", "echo $HOME; exit 3"}, `sh -c 'echo $HOME; exit 3'`},
		{[]string{"echo", "a b", "*", "~", "`x`", `"q"`, "\\", "\n"}, "echo 'a b' '*' '~' '`x`' '\"q\"' '\\' '\n'"},
		{[]string{"env", "A=1", "k@host:/p,q+r%"}, "env A=1 k@host:/p,q+r%"},
	}
	for _, tt := range tests {
		got := shellJoin(tt.words)
		if got != tt.want {
			t.Errorf("shellJoin(%q) = %q, want %q", tt.words, got, tt.want)
		}
		// The real test: /bin/sh splits it back into exactly these words.
		script := "set -- " + got + "\nfor w in \"$@\"; do printf '%s\\0' \"$w\"; done"
		out, err := exec.Command("/bin/sh", "-c", script).Output()
		if err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
		gotWords := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if diff := cmp.Diff(tt.words, gotWords); diff != "" {
			t.Errorf("sh splits shellJoin(%q) differently (-want +got):\n%s", tt.words, diff)
		}
	}
}

func TestCommandString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"python3 -c 'print(1+1)'"}, "python3 -c 'print(1+1)'"}, // one quoted argument: as is
		{[]string{"ls"}, "ls"},
		{[]string{"python3", "-c", "print(1+1)"}, "python3 -c 'print(1+1)'"},
	}
	for _, tt := range tests {
		if got := commandString(tt.args); got != tt.want {
			t.Errorf("commandString(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestParseHumanDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		unit    time.Duration
		want    time.Duration
		wantErr bool
	}{
		{in: "30s", unit: time.Second, want: 30 * time.Second},
		{in: "5m", unit: time.Second, want: 5 * time.Minute},
		{in: "2h", unit: time.Minute, want: 2 * time.Hour},
		{in: "1h30m", unit: time.Minute, want: 90 * time.Minute},
		{in: "2d", unit: time.Minute, want: 48 * time.Hour},
		{in: "45", unit: time.Second, want: 45 * time.Second},
		{in: "45", unit: time.Minute, want: 45 * time.Minute},
		{in: " 10s ", unit: time.Second, want: 10 * time.Second},
		{in: "0", unit: time.Second, wantErr: true},
		{in: "-5s", unit: time.Second, wantErr: true},
		{in: "", unit: time.Second, wantErr: true},
		{in: "soon", unit: time.Second, wantErr: true},
		{in: "xd", unit: time.Second, wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseHumanDuration(tt.in, tt.unit)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseHumanDuration(%q, %v) = %v, %v; want %v, error %v", tt.in, tt.unit, got, err, tt.want, tt.wantErr)
		}
	}
	if got := wholeUnits(90*time.Second, time.Minute); got != 2 {
		t.Errorf("wholeUnits(90s, minute) = %d, want 2 (round up)", got)
	}
	if got := wholeUnits(1500*time.Millisecond, time.Second); got != 2 {
		t.Errorf("wholeUnits(1.5s, second) = %d, want 2", got)
	}
}

// TestExec runs exec against a fake API: selection, the request it sends,
// stdout/stderr separation, stdin forwarding and exit-code passthrough.
func TestExec(t *testing.T) {
	home := isolate(t)
	var got []api.ExecRequest
	exitCode, stopReason := 0, ""
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb-1", Status: api.StatusActive}}),
		"POST /v1/sandboxes/sb-1/exec": func(w http.ResponseWriter, r *http.Request) {
			var req api.ExecRequest
			json.NewDecoder(r.Body).Decode(&req)
			got = append(got, req)
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			enc := json.NewEncoder(w)
			enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: "out\n"})
			enc.Encode(api.ExecEvent{Type: api.EventStderr, Data: "err\n"})
			if stopReason == api.StopReasonTimeout {
				enc.Encode(api.ExecEvent{Type: api.EventStderr, Data: timeoutNote(req.Timeout)})
			}
			enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: exitCode, ExecOutputInfo: api.ExecOutputInfo{StopReason: stopReason}})
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	r := runCLI(t, "piped input", "exec", "--timeout", "90s", "--cwd", "/tmp", "-e", "A=1", "-e", "B=x=y", "--", "python3", "-c", "print(1+1)")
	if diff := cmp.Diff(result{stdout: "out\n", stderr: "err\n"}, r, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("exec (-want +got):\n%s", diff)
	}
	want := api.ExecRequest{Command: "python3 -c 'print(1+1)'", Timeout: 90, Stdin: "piped input", Cwd: "/tmp", Env: map[string]string{"A": "1", "B": "x=y"}}
	if len(got) != 1 {
		t.Fatalf("server saw %d execs, want 1", len(got))
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("exec request (-want +got):\n%s", diff)
	}

	exitCode = 7
	if r := runCLI(t, "", "exec", "false"); r.code != 7 || r.stderr != "err\n" {
		t.Errorf("exec with remote exit 7: code %d stderr %q, want 7 and only the command's stderr", r.code, r.stderr)
	}
	exitCode = 124
	// A command's own exit 124 is not a timeout.
	if r := runCLI(t, "", "exec", "exit 124"); r.code != 124 || r.stderr != "err\n" {
		t.Errorf("exec exiting 124 by itself: code %d stderr %q, want 124 and only the command's stderr", r.code, r.stderr)
	}
	stopReason = api.StopReasonTimeout
	// The sandbox's note and the CLI's error say the same: only the error.
	if r := runCLI(t, "", "exec", "--timeout", "1s", "sleep 5"); r.code != 124 || r.stderr != "err\nerror: the command timed out after 1s (exit code 124)\nhint: "+timeoutHint(time.Second)+"\n" {
		t.Errorf("exec timing out: code %d stderr %q, want 124 and the timeout said once", r.code, r.stderr)
	}
	if c := got[len(got)-1].Command; c != "sleep 5" {
		t.Errorf("quoted form sent %q, want %q", c, "sleep 5")
	}
}

// TestExecBinaryStdin: stdin that is not UTF-8 is refused before anything
// is sent, with a hint naming files cp. It travels as a JSON string, which
// carries such bytes as U+FFFD: before, `tar c . | boxkite exec -- tar x`
// unpacked altered files and exited 0.
func TestExecBinaryStdin(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{}) // any request fails the test
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	for _, args := range [][]string{{"exec", "--", "tar", "x"}, {"exec", "--json", "cat"}} {
		r := runCLI(t, "ustar\x00héllo\xe9\x01", args...)
		want := "error: stdin is not UTF-8 text (byte 12 is 0xe9): exec forwards text only\n" +
			"hint: send binary data as a file, byte for byte: '... | boxkite files cp - :/workspace/FILE', then exec a command that reads it\n"
		if r.code != 1 || r.stdout != "" || r.stderr != want {
			t.Errorf("%v with binary stdin: code %d stdout %q stderr %q; want 1 and\n%s", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestExecBinaryStdout: stdout that was not UTF-8 arrives with U+FFFD for
// each such byte (output travels as JSON strings); exec says so on stderr
// and how to copy it as it is, with --json too. Before, `boxkite exec --
// cat image.png > image.png` wrote an altered file without a word. Output
// that merely holds a U+FFFD, or changed length by a redaction, gets no
// note.
func TestExecBinaryStdout(t *testing.T) {
	home := isolate(t)
	var data string
	var wrote int64
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb-1", Status: api.StatusActive}}),
		"POST /v1/sandboxes/sb-1/exec": func(w http.ResponseWriter, r *http.Request) {
			info := api.ExecOutputInfo{StdoutBytes: wrote, OutputLimitBytes: 1 << 20}
			if r.Header.Get("Accept") != api.ContentTypeNDJSON {
				replyJSON(200, api.ExecResult{Stdout: data, ExecOutputInfo: info})(w, r)
				return
			}
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			enc := json.NewEncoder(w)
			enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: data})
			enc.Encode(api.ExecEvent{Type: api.EventExit, ExecOutputInfo: info})
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	note := "note: stdout was not all UTF-8 text: each byte that is not was shown as U+FFFD, so binary output arrived altered\n" +
		"note: copy binary output byte for byte: have the command write a file, then 'boxkite files cp :PATH -'\n"
	for _, tc := range []struct {
		name, data string
		wrote      int64
		note       bool
	}{
		{"bytes that are not UTF-8", "PNG\uFFFD\uFFFD\n", 6, true},
		{"a U+FFFD the command wrote", "ok \uFFFD\n", 7, false},
		{"a redaction", "key [REDACTED_AWS_KEY]\n", 25, false},
	} {
		data, wrote = tc.data, tc.wrote
		want := ""
		if tc.note {
			want = note
		}
		if r := runCLI(t, "", "exec", "cat", "x.png"); r.code != 0 || r.stdout != tc.data || r.stderr != want {
			t.Errorf("%s: code %d stdout %q stderr %q; want 0, the output and %q", tc.name, r.code, r.stdout, r.stderr, want)
		}
		if r := runCLI(t, "", "exec", "--json", "cat", "x.png"); r.code != 0 || r.stderr != want {
			t.Errorf("%s, --json: code %d stderr %q; want 0 and %q", tc.name, r.code, r.stderr, want)
		}
	}
}

// TestExecMissingCwdHint: the sandbox refuses a --cwd that is not there
// with a hint (sidecar/exec.go, for every surface); exec prints it, as
// text and with --json. It once came without one, and exec added its own.
func TestExecMissingCwdHint(t *testing.T) {
	home := isolate(t)
	const sidecarHint = "make the directory first (mkdir -p DIR in a command of its own), or give one that exists; a relative cwd starts at /workspace"
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb-1", Status: api.StatusActive}}),
		"POST /v1/sandboxes/sb-1/exec": func(w http.ResponseWriter, r *http.Request) {
			var req api.ExecRequest
			json.NewDecoder(r.Body).Decode(&req)
			replyJSON(400, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeBadRequest, Message: "cwd does not exist: " + req.Cwd, Hint: sidecarHint}})(w, r)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	const hint = "hint: " + sidecarHint + "\n"
	for _, args := range [][]string{
		{"exec", "--cwd", "my dir", "--", "true"},
		{"exec", "--cwd", "my dir", "--json", "--", "true"},
	} {
		r := runCLI(t, "", args...)
		want := "error: exec in sandbox sb-1: cwd does not exist: my dir [bad_request]\n" + hint
		if r.code != exitError || r.stderr != want {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, r.code, r.stderr, exitError, want)
		}
	}
	if r := runCLI(t, "", "exec", "--", "true"); strings.Contains(r.stderr, "--cwd") {
		t.Errorf("exec without --cwd: stderr %q names --cwd", r.stderr)
	}
}
