package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// TestToolRoutes checks that every call of the sandbox tool surface sends
// the right method, path, query and body, and decodes the answer.
func TestToolRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exit := 0
	tests := []struct {
		name  string
		call  func(c *client.Client) (any, error)
		want  string // "METHOD /path?query body"
		reply string
		got   any // the decoded answer
	}{
		{
			name: "write file",
			call: func(c *client.Client) (any, error) {
				return c.WriteFile(ctx, "sb", api.FileCreateRequest{Path: "a.txt", Content: "hi"})
			},
			want:  `POST /v1/sandboxes/sb/files {"path":"a.txt","content":"hi"}`,
			reply: `{"path":"/workspace/a.txt","size":2,"created":true}`,
			got:   &api.FileCreateResult{Path: "/workspace/a.txt", Size: 2, Created: true},
		},
		{
			name: "view",
			call: func(c *client.Client) (any, error) {
				return c.View(ctx, "sb", api.ViewRequest{Path: "a.txt", ViewRange: []int{2, -1}})
			},
			want:  `POST /v1/sandboxes/sb/files/view {"path":"a.txt","view_range":[2,-1]}`,
			reply: `{"content":"two\n","lines":2,"is_directory":false,"entries":null}`,
			got:   &api.ViewResult{Content: "two\n", Lines: 2},
		},
		{
			name: "str-replace",
			call: func(c *client.Client) (any, error) {
				return c.StrReplace(ctx, "sb", api.StrReplaceRequest{Path: "a", OldStr: "x", NewStr: "y", ReplaceAll: true})
			},
			want:  `POST /v1/sandboxes/sb/files/str-replace {"path":"a","old_str":"x","new_str":"y","replace_all":true}`,
			reply: `{"path":"/workspace/a","replaced":true,"occurrences":3}`,
			got:   &api.StrReplaceResult{Path: "/workspace/a", Replaced: true, Occurrences: 3},
		},
		{
			name:  "ls",
			call:  func(c *client.Client) (any, error) { return c.Ls(ctx, "sb", api.LsRequest{Path: "/workspace"}) },
			want:  `POST /v1/sandboxes/sb/files/ls {"path":"/workspace"}`,
			reply: `{"entries":[{"path":"/workspace/d/","is_dir":true,"size":0,"modified_at":"2026-01-01T00:00:00Z"}]}`,
			got:   &api.LsResult{Entries: []api.LsEntry{{Path: "/workspace/d/", IsDir: true, ModifiedAt: mustTime("2026-01-01T00:00:00Z")}}},
		},
		{
			name:  "glob",
			call:  func(c *client.Client) (any, error) { return c.Glob(ctx, "sb", api.GlobRequest{Pattern: "**/*.go"}) },
			want:  `POST /v1/sandboxes/sb/files/glob {"pattern":"**/*.go"}`,
			reply: `{"matches":[],"truncated":true}`,
			got:   &api.GlobResult{Matches: []api.LsEntry{}, Truncated: true},
		},
		{
			name: "grep",
			call: func(c *client.Client) (any, error) {
				return c.Grep(ctx, "sb", api.GrepRequest{Pattern: "fo+", Glob: "*.txt", MaxMatches: 3})
			},
			want:  `POST /v1/sandboxes/sb/files/grep {"pattern":"fo+","glob":"*.txt","max_matches":3}`,
			reply: `{"matches":[{"path":"/workspace/a.txt","line":1,"text":"foo"}],"truncated":false}`,
			got:   &api.GrepResult{Matches: []api.GrepMatch{{Path: "/workspace/a.txt", Line: 1, Text: "foo"}}},
		},
		{
			name:  "watch",
			call:  func(c *client.Client) (any, error) { return c.Watch(ctx, "sb", api.WatchRequest{Recursive: true}) },
			want:  `POST /v1/sandboxes/sb/files/watch {"recursive":true}`,
			reply: `{"changes":[{"path":"a","event":"created"}],"timed_out":false}`,
			got:   &api.WatchResult{Changes: []api.WatchChange{{Path: "a", Event: api.WatchCreated}}},
		},
		{
			name: "present files",
			call: func(c *client.Client) (any, error) {
				return c.PresentFiles(ctx, "sb", api.PresentFilesRequest{Filepaths: []string{"a"}})
			},
			want:  `POST /v1/sandboxes/sb/files/present {"filepaths":["a"]}`,
			reply: `{"files":[],"copy_operations":[]}`,
			got:   &api.PresentFilesResult{Files: []api.PresentedFile{}, CopyOperations: []string{}},
		},
		{
			name: "start process",
			call: func(c *client.Client) (any, error) {
				return c.StartProcess(ctx, "sb", api.ProcessStartRequest{Command: "sleep 9", MaxRuntimeSeconds: 60})
			},
			want:  `POST /v1/sandboxes/sb/processes {"command":"sleep 9","max_runtime_seconds":60}`,
			reply: `{"process_id":"proc_1","status":"running","started_at":"2026-01-01T00:00:00Z"}`,
			got:   &api.ProcessStarted{ProcessID: "proc_1", Status: api.ProcessRunning, StartedAt: mustTime("2026-01-01T00:00:00Z")},
		},
		{
			name:  "processes",
			call:  func(c *client.Client) (any, error) { return c.Processes(ctx, "sb") },
			want:  `GET /v1/sandboxes/sb/processes`,
			reply: `{"processes":[{"process_id":"proc_1","command":"x","description":"","status":"exited","started_at":"2026-01-01T00:00:00Z","exit_code":0}]}`,
			got: &api.ProcessList{Processes: []api.ProcessInfo{{
				ProcessID: "proc_1", Command: "x", Status: api.ProcessExited, StartedAt: mustTime("2026-01-01T00:00:00Z"), ExitCode: &exit,
			}}},
		},
		{
			name:  "process output",
			call:  func(c *client.Client) (any, error) { return c.ProcessOutput(ctx, "sb", "proc_1", 42) },
			want:  `GET /v1/sandboxes/sb/processes/proc_1/output?since_offset=42`,
			reply: `{"status":"running","stdout_chunk":"x","next_offset":43,"truncated":false}`,
			got:   &api.ProcessOutput{Status: api.ProcessRunning, StdoutChunk: "x", NextOffset: 43},
		},
		{
			name:  "process input",
			call:  func(c *client.Client) (any, error) { return c.ProcessInput(ctx, "sb", "proc_1", "y\n") },
			want:  `POST /v1/sandboxes/sb/processes/proc_1/input {"data":"y\n"}`,
			reply: `{"bytes_written":2}`,
			got:   &api.ProcessInputResult{BytesWritten: 2},
		},
		{
			name:  "stop process",
			call:  func(c *client.Client) (any, error) { return c.StopProcess(ctx, "sb", "proc_1") },
			want:  `POST /v1/sandboxes/sb/processes/proc_1/stop`,
			reply: `{"status":"stopped","exit_code":0}`,
			got:   &api.ProcessStopResult{Status: api.ProcessStopped, ExitCode: &exit},
		},
		{
			name:  "kill all",
			call:  func(c *client.Client) (any, error) { return c.KillAllProcesses(ctx, "sb") },
			want:  `POST /v1/sandboxes/sb/processes/kill-all`,
			reply: `{"killed":2}`,
			got:   &api.KillAllResult{Killed: 2},
		},
		{
			name: "interpreter exec",
			call: func(c *client.Client) (any, error) {
				return c.InterpreterExec(ctx, "sb", api.InterpreterExecRequest{Code: "1+1"})
			},
			want:  `POST /v1/sandboxes/sb/interpreter/exec {"code":"1+1"}`,
			reply: `{"stdout":"","result":"2","error":null,"truncated":false}`,
			got:   &api.InterpreterExecResult{Result: ptr("2")},
		},
		{
			name:  "interpreter reset",
			call:  func(c *client.Client) (any, error) { return c.InterpreterReset(ctx, "sb") },
			want:  `POST /v1/sandboxes/sb/interpreter/reset`,
			reply: `{"status":"reset"}`,
			got:   &api.InterpreterReset{Status: "reset"},
		},
		{
			name:  "interpreter status",
			call:  func(c *client.Client) (any, error) { return c.InterpreterStatus(ctx, "sb") },
			want:  `GET /v1/sandboxes/sb/interpreter/status`,
			reply: `{"running":false}`,
			got:   &api.InterpreterStatus{},
		},
		{
			name:  "node interpreter reset",
			call:  func(c *client.Client) (any, error) { return c.NodeInterpreterReset(ctx, "sb") },
			want:  `POST /v1/sandboxes/sb/node-interpreter/reset`,
			reply: `{"status":"reset"}`,
			got:   &api.InterpreterReset{Status: "reset"},
		},
		{
			name:  "node interpreter status",
			call:  func(c *client.Client) (any, error) { return c.NodeInterpreterStatus(ctx, "sb") },
			want:  `GET /v1/sandboxes/sb/node-interpreter/status`,
			reply: `{"running":true}`,
			got:   &api.InterpreterStatus{Running: true},
		},
		{
			name:  "lsp start",
			call:  func(c *client.Client) (any, error) { return c.LSPStart(ctx, "sb", api.LSPStartRequest{Language: "go"}) },
			want:  `POST /v1/sandboxes/sb/lsp/start {"language":"go"}`,
			reply: `{"lsp_id":"lsp_1"}`,
			got:   &api.LSPStarted{LSPID: "lsp_1"},
		},
		{
			name: "lsp open",
			call: func(c *client.Client) (any, error) {
				return nil, c.LSPOpen(ctx, "sb", "lsp_1", api.LSPOpenRequest{Path: "m.go", Content: "package m"})
			},
			want:  `POST /v1/sandboxes/sb/lsp/lsp_1/open {"path":"m.go","content":"package m"}`,
			reply: `{"status":"opened"}`,
		},
		{
			name: "lsp completion",
			call: func(c *client.Client) (any, error) {
				return c.LSPCompletion(ctx, "sb", "lsp_1", api.LSPCompletionRequest{Path: "m.go", Line: 1, Character: 4})
			},
			want:  `POST /v1/sandboxes/sb/lsp/lsp_1/completion {"path":"m.go","line":1,"character":4}`,
			reply: `{"items":[{"label":"Println"}]}`,
			got:   &api.LSPCompletionResult{Items: []json.RawMessage{json.RawMessage(`{"label":"Println"}`)}},
		},
		{
			name:  "lsp stop",
			call:  func(c *client.Client) (any, error) { return nil, c.LSPStop(ctx, "sb", "lsp_1") },
			want:  `POST /v1/sandboxes/sb/lsp/lsp_1/stop`,
			reply: `{"status":"stopped"}`,
		},
		{
			name:  "log",
			call:  func(c *client.Client) (any, error) { return c.Log(ctx, "sb", 10, 20) },
			want:  `GET /v1/sandboxes/sb/log?limit=10&offset=20`,
			reply: `{"entries":[],"limit":10,"offset":20,"total":25}`,
			got:   &api.LogPage{Entries: []api.LogEntry{}, Limit: 10, Offset: 20, Total: 25},
		},
		{
			name:  "log defaults",
			call:  func(c *client.Client) (any, error) { return c.Log(ctx, "sb", 0, 0) },
			want:  `GET /v1/sandboxes/sb/log`,
			reply: `{"entries":[],"limit":50,"offset":0,"total":0}`,
			got:   &api.LogPage{Entries: []api.LogEntry{}, Limit: 50},
		},
		{
			name:  "ids are escaped",
			call:  func(c *client.Client) (any, error) { return c.StopProcess(ctx, "s/b", "p?x") },
			want:  `POST /v1/sandboxes/s%2Fb/processes/p%3Fx/stop`,
			reply: `{"status":"stopped","exit_code":null}`,
			got:   &api.ProcessStopResult{Status: api.ProcessStopped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got string
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.Method + " " + r.URL.EscapedPath()
				if q := r.URL.RawQuery; q != "" {
					got += "?" + q
				}
				if b, _ := io.ReadAll(r.Body); len(b) > 0 {
					got += " " + strings.TrimSpace(string(b))
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.reply)
			})
			res, err := tt.call(c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if got != tt.want {
				t.Errorf("request = %s\nwant      %s", got, tt.want)
			}
			if tt.got != nil {
				if diff := cmp.Diff(tt.got, res); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestToolRoutesErrors checks that a refusal of any route is an *api.Error.
func TestToolRoutesErrors(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"process proc_x not found"}}`)
	})
	_, err := c.Bind("sb").StopProcess(context.Background(), "proc_x")
	want := &api.Error{Status: 404, Code: api.CodeNotFound, Message: "process proc_x not found"}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("StopProcess error (-want +got):\n%s", diff)
	}
}
