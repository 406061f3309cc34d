package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/tools"
)

// The client's bound handle is what agents hand the tools; it must offer
// every optional capability too.
var (
	_ tools.Sandbox         = (*client.Sandbox)(nil)
	_ tools.Presenter       = (*client.Sandbox)(nil)
	_ tools.Interpreter     = (*client.Sandbox)(nil)
	_ tools.Processes       = (*client.Sandbox)(nil)
	_ tools.LanguageServers = (*client.Sandbox)(nil)
)

// toolbox runs agent tools against one real sandbox through the client.
type toolbox struct {
	t  *testing.T
	sb *client.Sandbox
	ts []tools.Tool
}

func (sb *sandbox) toolbox(t *testing.T) *toolbox {
	return &toolbox{t: t, sb: client.New(sb.s.BaseURL, sb.s.APIKey).Bind(sb.id), ts: tools.All()}
}

// call runs tool name with args (a JSON object, or a value marshalled to one).
func (tb *toolbox) call(name string, args any) string {
	tb.t.Helper()
	raw, ok := args.(string)
	if !ok {
		raw = string(mustJSON(tb.t, args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return tools.Call(ctx, tb.ts, tb.sb, name, json.RawMessage(raw))
}

// toolStep is one tool call and what its text must be: exactly want, or
// else contain every string of has.
type toolStep struct {
	name, args string
	want       string
	has        []string
}

func (tb *toolbox) run(steps []toolStep) {
	tb.t.Helper()
	for _, s := range steps {
		got := tb.call(s.name, s.args)
		if s.want != "" && got != s.want {
			tb.t.Errorf("%s %s =\n%s\nwant\n%s", s.name, s.args, got, s.want)
		}
		for _, h := range s.has {
			if !strings.Contains(got, h) {
				tb.t.Errorf("%s %s =\n%s\nwant it to contain %q", s.name, s.args, got, h)
			}
		}
	}
}

var processIDRE = regexp.MustCompile(`proc_[0-9a-f]{32}`)

// TestDefaultTools calls each of the 15 default tools against a real
// sandbox and checks the texts an agent reads.
func TestDefaultTools(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tb := sb.toolbox(t)
	if n := len(tools.Default()); n != 15 {
		t.Fatalf("tools.Default() has %d tools, want 15", n)
	}
	tb.run([]toolStep{
		{name: "bash_tool", args: `{"command":"echo hi; echo err >&2"}`, want: "hi\nerr"},
		{name: "bash_tool", args: `{"command":"true"}`, want: "(command completed with no output)"},
		{name: "bash_tool", args: `{"command":"exit 3"}`, want: "Error (exit code 3):\n(no output)"},
		{name: "bash_tool", args: `{"command":"no-such-command"}`, has: []string{"Error (exit code 127):", "Hint: the command is not installed"}},
		{name: "bash_tool", args: `{"command":"sleep 5","timeout":1}`, has: []string{"Error (exit code 124):", "timed out", "Hint: the command hit its timeout of 1s"}},
		{name: "python_interpreter", args: `{"code":"y = 6 * 7\nprint('p')\ny"}`, want: "p\n42"},
		{name: "python_interpreter", args: `{"code":"y + 1"}`, want: "43"},
		{name: "python_interpreter", args: `{"code":"import nosuchmodule"}`, has: []string{"Error:", "ModuleNotFoundError"}},
		{name: "file_create", args: `{"path":"notes/a.txt","content":"one\ntwo\nthree\n"}`, want: "Created file: /workspace/notes/a.txt (14 bytes)"},
		{name: "view", args: `{"path":"notes/a.txt","start_line":2}`, want: "File: notes/a.txt (lines 2-3 of 3)\n     2\ttwo\n     3\tthree"},
		{name: "view", args: `{"path":"/etc/passwd"}`, want: "Error [bad_request]: Invalid path outside allowed roots: /etc/passwd\nHint: use a path under /workspace (relative paths start there), /tmp, /mnt/user-data/outputs, /mnt/user-data/uploads or /mnt/skills"},
		{name: "view", args: `{"path":"notes"}`, want: "Directory: notes\n\na.txt"},
		{name: "str_replace", args: `{"path":"notes/a.txt","old_str":"two","new_str":"TWO"}`, has: []string{"Replaced 1 occurrence in"}},
		{name: "str_replace", args: `{"path":"notes/a.txt","old_str":"four","new_str":"x"}`, has: []string{"Error: old_str not found in"}},
		{name: "ls", args: `{"path":"notes"}`, want: "Directory: notes\n\n/workspace/notes/a.txt  (14 bytes)"},
		{name: "glob", args: `{"pattern":"**/*.txt"}`, has: []string{"/workspace/notes/a.txt"}},
		{name: "grep", args: `{"pattern":"TW."}`, want: "/workspace/notes/a.txt:2: TWO"},
		{name: "grep", args: `{"pattern":"nothing-here"}`, has: []string{"No matches for 'nothing-here'"}},
		{name: "present_files", args: `{"paths":["notes/a.txt","missing.txt"]}`, want: "Presented 1 of 2 files:\n- **a.txt** (14 bytes): Ready for download\n- missing.txt: File not found or not synced"},
		{name: "watch_directory", args: `{"path":"notes","timeout_seconds":0.2}`, want: "No changes under notes within 0.2s."},
	})
	if out := sb.sh("cat /mnt/user-data/outputs/a.txt"); out != "one\nTWO\nthree\n" {
		t.Errorf("presented file in outputs: %q", out)
	}

	t.Run("processes", func(t *testing.T) {
		sb := sb.in(t)
		tb := sb.toolbox(t)
		started := tb.call("start_process", `{"command":"cat","description":"echo back","max_runtime_seconds":60}`)
		id := processIDRE.FindString(started)
		if id == "" || !strings.HasPrefix(started, "Started process "+id+" (status: running)") {
			t.Fatalf("start_process = %q", started)
		}
		args := `{"process_id":"` + id + `"}`
		tb.run([]toolStep{
			{name: "send_process_input", args: `{"process_id":"` + id + `","data":"ping\n"}`, want: "Wrote 5 bytes to process " + id},
		})
		deadline := time.Now().Add(20 * time.Second)
		for out := ""; out != "Process "+id+": running\nping\nNext offset: 5"; out = tb.call("get_process_output", args) {
			if time.Now().After(deadline) {
				t.Fatalf("get_process_output = %q", out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		tb.run([]toolStep{
			{name: "get_process_output", args: `{"process_id":"` + id + `","since_offset":5}`, want: "Process " + id + ": running\n(no new output)\nNext offset: 5"},
			{name: "list_processes", args: `{}`, has: []string{id + "  running  cat"}},
			{name: "stop_process", args: args, has: []string{"Process " + id + ": stopped (exit_code="}},
			{name: "send_process_input", args: `{"process_id":"` + id + `","data":"late\n"}`, has: []string{"Error [conflict]: process is not running"}},
			{name: "get_process_output", args: `{"process_id":"proc_00000000000000000000000000000000"}`, has: []string{"Error [not_found]: ", "not found"}},
		})
	})

	t.Run("watch sees a change", func(t *testing.T) {
		sb := sb.in(t)
		tb := sb.toolbox(t)
		done := make(chan string, 1)
		go func() { done <- tb.call("watch_directory", `{"path":"notes","timeout_seconds":20}`) }()
		// The watch is armed at some point after the call; keep changing
		// the directory until it reports.
		for i := 0; ; i++ {
			select {
			case out := <-done:
				// file_create writes a temp file and renames it into place.
				if !strings.HasPrefix(out, "Changes under notes:\nmoved_to: new-") {
					t.Errorf("watch_directory = %q", out)
				}
				return
			case <-time.After(100 * time.Millisecond):
				sb.ok("POST", "/files", map[string]string{"path": "notes/new-" + strings.Repeat("x", i%3+1) + ".txt", "content": "x"})
			}
		}
	})
}
