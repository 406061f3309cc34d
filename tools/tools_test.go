package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// call is one recorded call on a fake sandbox.
type call struct {
	Method string
	Req    any
}

// idReq records a call addressed to a process or language server.
type idReq struct {
	ID  string
	Req any
}

var errUnexpected = errors.New("unexpected call")

// fake is a func-field Sandbox that implements every capability and
// records each call. A nil func answers errUnexpected, a transport error,
// so a call the test did not plan shows up in the text.
type fake struct {
	calls    []call
	execCtxs []error // ctx.Err() at each Exec, to see cleanups run on a live context

	exec       func(api.ExecRequest) (*api.ExecResult, error)
	writeFile  func(api.FileCreateRequest) (*api.FileCreateResult, error)
	view       func(api.ViewRequest) (*api.ViewResult, error)
	strReplace func(api.StrReplaceRequest) (*api.StrReplaceResult, error)
	list       func(api.LsRequest) (*api.LsResult, error)
	glob       func(api.GlobRequest) (*api.GlobResult, error)
	grep       func(api.GrepRequest) (*api.GrepResult, error)
	watch      func(api.WatchRequest) (*api.WatchResult, error)

	present     func(api.PresentFilesRequest) (*api.PresentFilesResult, error)
	interpreter func(api.InterpreterExecRequest) (*api.InterpreterExecResult, error)

	startProcess  func(api.ProcessStartRequest) (*api.ProcessStarted, error)
	processOutput func(id string, since int64) (*api.ProcessOutput, error)
	processInput  func(id, data string) (*api.ProcessInputResult, error)
	stopProcess   func(id string) (*api.ProcessStopResult, error)
	listProcesses func() (*api.ProcessList, error)

	lspStart      func(api.LSPStartRequest) (*api.LSPStarted, error)
	lspOpen       func(id string, req api.LSPOpenRequest) error
	lspCompletion func(id string, req api.LSPCompletionRequest) (*api.LSPCompletionResult, error)
	lspStop       func(id string) error
}

var (
	_ Sandbox         = (*fake)(nil)
	_ Presenter       = (*fake)(nil)
	_ Interpreter     = (*fake)(nil)
	_ Processes       = (*fake)(nil)
	_ LanguageServers = (*fake)(nil)
)

// do records a call and runs fn, or fails it when fn is nil.
func do[R any](f *fake, method string, req any, fn func() (R, error), isNil bool) (R, error) {
	f.calls = append(f.calls, call{method, req})
	if isNil {
		var zero R
		return zero, errUnexpected
	}
	return fn()
}

func (f *fake) Exec(ctx context.Context, r api.ExecRequest) (*api.ExecResult, error) {
	f.execCtxs = append(f.execCtxs, ctx.Err())
	return do(f, "Exec", r, func() (*api.ExecResult, error) { return f.exec(r) }, f.exec == nil)
}

func (f *fake) WriteFile(_ context.Context, r api.FileCreateRequest) (*api.FileCreateResult, error) {
	return do(f, "WriteFile", r, func() (*api.FileCreateResult, error) { return f.writeFile(r) }, f.writeFile == nil)
}

func (f *fake) View(_ context.Context, r api.ViewRequest) (*api.ViewResult, error) {
	return do(f, "View", r, func() (*api.ViewResult, error) { return f.view(r) }, f.view == nil)
}

func (f *fake) StrReplace(_ context.Context, r api.StrReplaceRequest) (*api.StrReplaceResult, error) {
	return do(f, "StrReplace", r, func() (*api.StrReplaceResult, error) { return f.strReplace(r) }, f.strReplace == nil)
}

func (f *fake) List(_ context.Context, r api.LsRequest) (*api.LsResult, error) {
	return do(f, "List", r, func() (*api.LsResult, error) { return f.list(r) }, f.list == nil)
}

func (f *fake) Glob(_ context.Context, r api.GlobRequest) (*api.GlobResult, error) {
	return do(f, "Glob", r, func() (*api.GlobResult, error) { return f.glob(r) }, f.glob == nil)
}

func (f *fake) Grep(_ context.Context, r api.GrepRequest) (*api.GrepResult, error) {
	return do(f, "Grep", r, func() (*api.GrepResult, error) { return f.grep(r) }, f.grep == nil)
}

func (f *fake) Watch(_ context.Context, r api.WatchRequest) (*api.WatchResult, error) {
	return do(f, "Watch", r, func() (*api.WatchResult, error) { return f.watch(r) }, f.watch == nil)
}

func (f *fake) PresentFiles(_ context.Context, r api.PresentFilesRequest) (*api.PresentFilesResult, error) {
	return do(f, "PresentFiles", r, func() (*api.PresentFilesResult, error) { return f.present(r) }, f.present == nil)
}

func (f *fake) InterpreterExec(_ context.Context, r api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return do(f, "InterpreterExec", r, func() (*api.InterpreterExecResult, error) { return f.interpreter(r) }, f.interpreter == nil)
}

func (f *fake) StartProcess(_ context.Context, r api.ProcessStartRequest) (*api.ProcessStarted, error) {
	return do(f, "StartProcess", r, func() (*api.ProcessStarted, error) { return f.startProcess(r) }, f.startProcess == nil)
}

func (f *fake) ProcessOutput(_ context.Context, id string, since int64) (*api.ProcessOutput, error) {
	return do(f, "ProcessOutput", idReq{id, since}, func() (*api.ProcessOutput, error) { return f.processOutput(id, since) }, f.processOutput == nil)
}

func (f *fake) SendProcessInput(_ context.Context, id, data string) (*api.ProcessInputResult, error) {
	return do(f, "SendProcessInput", idReq{id, data}, func() (*api.ProcessInputResult, error) { return f.processInput(id, data) }, f.processInput == nil)
}

func (f *fake) StopProcess(_ context.Context, id string) (*api.ProcessStopResult, error) {
	return do(f, "StopProcess", idReq{id, nil}, func() (*api.ProcessStopResult, error) { return f.stopProcess(id) }, f.stopProcess == nil)
}

func (f *fake) ListProcesses(context.Context) (*api.ProcessList, error) {
	return do(f, "ListProcesses", nil, func() (*api.ProcessList, error) { return f.listProcesses() }, f.listProcesses == nil)
}

func (f *fake) LSPStart(_ context.Context, r api.LSPStartRequest) (*api.LSPStarted, error) {
	return do(f, "LSPStart", r, func() (*api.LSPStarted, error) { return f.lspStart(r) }, f.lspStart == nil)
}

func (f *fake) LSPOpen(_ context.Context, id string, r api.LSPOpenRequest) error {
	_, err := do(f, "LSPOpen", idReq{id, r}, func() (struct{}, error) { return struct{}{}, f.lspOpen(id, r) }, f.lspOpen == nil)
	return err
}

func (f *fake) LSPCompletion(_ context.Context, id string, r api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
	return do(f, "LSPCompletion", idReq{id, r}, func() (*api.LSPCompletionResult, error) { return f.lspCompletion(id, r) }, f.lspCompletion == nil)
}

func (f *fake) LSPStop(_ context.Context, id string) error {
	_, err := do(f, "LSPStop", idReq{id, nil}, func() (struct{}, error) { return struct{}{}, f.lspStop(id) }, f.lspStop == nil)
	return err
}

// bare has only the Sandbox methods of a fake, none of the optional ones.
type bare struct{ Sandbox }

// toolCase is one row of a tool's table test: the arguments, the fake's
// behaviour, the text and the calls the fake must have seen.
type toolCase struct {
	name  string
	args  string
	fake  fake
	bare  bool // hide the optional capabilities
	want  string
	calls []call
}

// runTool runs each case through Tool.Call on a fresh fake.
func runTool(t *testing.T, tool string, cases []toolCase) {
	t.Helper()
	tl, ok := Lookup(All(), tool)
	if !ok {
		t.Fatalf("no tool %q", tool)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			var sb Sandbox = &f
			if tc.bare {
				sb = bare{&f}
			}
			got := tl.Call(context.Background(), sb, json.RawMessage(tc.args))
			if got != tc.want {
				t.Errorf("%s(%s) text:\n%s\nwant:\n%s\ndiff (-want +got):\n%s", tool, tc.args, got, tc.want, cmp.Diff(tc.want, got))
			}
			if diff := cmp.Diff(tc.calls, f.calls); diff != "" {
				t.Errorf("%s(%s) calls (-want +got):\n%s", tool, tc.args, diff)
			}
		})
	}
}

func apiErr(status int, code, msg, hint string) *api.Error {
	return &api.Error{Status: status, Code: code, Message: msg, Hint: hint}
}

func intp(i int) *int { return &i }

func strp(s string) *string { return &s }

func TestToolNames(t *testing.T) {
	names := func(ts []Tool) []string {
		var n []string
		for _, t := range ts {
			n = append(n, t.Name)
		}
		return n
	}
	tests := []struct {
		set  string
		got  []Tool
		want []string
	}{
		{"Default", Default(), []string{
			"bash_tool", "python_interpreter", "file_create", "view", "str_replace", "present_files", "ls", "glob", "grep",
			"start_process", "get_process_output", "send_process_input", "stop_process", "list_processes", "watch_directory",
		}},
		{"Git", Git(), []string{"git_clone", "git_status", "git_add", "git_commit", "git_push", "git_pull", "git_branch", "git_checkout"}},
		{"LSP", LSP(), []string{"lsp_start", "lsp_completion", "lsp_stop"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, names(tt.got)); diff != "" {
			t.Errorf("%s() names (-want +got):\n%s", tt.set, diff)
		}
	}
	all := names(All())
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(all) || len(all) != 26 {
		t.Errorf("All() has %d tools, want 26 distinct: %v", len(all), all)
	}
}

func TestCall(t *testing.T) {
	panicky := Tool{Name: "boom", Schema: object(), Handler: func(context.Context, Sandbox, json.RawMessage) (string, error) {
		panic("kaboom")
	}}
	failing := Tool{Name: "fail", Schema: object(), Handler: func(ctx context.Context, _ Sandbox, _ json.RawMessage) (string, error) {
		return "", ctx.Err()
	}}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ts := append(All(), panicky, failing)
	tests := []struct {
		name, tool, args string
		ctx              context.Context
		want             string
	}{
		{"unknown tool", "rm_rf", `{}`, nil, `Error: unknown tool "rm_rf"; the tools are bash_tool, python_interpreter, file_create, view, str_replace, present_files, ls, glob, grep, start_process, get_process_output, send_process_input, stop_process, list_processes, watch_directory, git_clone, git_status, git_add, git_commit, git_push, git_pull, git_branch, git_checkout, lsp_start, lsp_completion, lsp_stop, boom, fail`},
		{"panic", "boom", ``, nil, "Error: internal error in boom: kaboom"},
		{"canceled", "fail", `null`, canceled, "Error: the call was canceled"},
		{"not an object", "bash_tool", `["ls"]`, nil, "Error: the arguments of bash_tool must be a JSON object"},
		{"not JSON", "bash_tool", `{"command":`, nil, "Error: the arguments of bash_tool must be a JSON object"},
		{"missing", "bash_tool", `{}`, nil, `Error: bash_tool needs the parameter "command"`},
		{"null required", "bash_tool", `{"command":null}`, nil, `Error: bash_tool needs the parameter "command"`},
		{"missing two", "str_replace", `{"path":"a"}`, nil, `Error: str_replace needs the parameter "old_str", "new_str"`},
		{"unknown", "bash_tool", `{"cmd":"ls"}`, nil, `Error: bash_tool has no parameter "cmd"; its parameters are command, timeout`},
		{"unknown, no params", "list_processes", `{"all":true}`, nil, `Error: list_processes takes no parameters; got "all"`},
		{"string for int", "bash_tool", `{"command":"ls","timeout":"5"}`, nil, `Error: parameter "timeout" of bash_tool must be an integer`},
		{"float for int", "bash_tool", `{"command":"ls","timeout":5.5}`, nil, `Error: parameter "timeout" of bash_tool must be an integer`},
		{"int for string", "bash_tool", `{"command":5}`, nil, `Error: parameter "command" of bash_tool must be a string`},
		{"string for number", "watch_directory", `{"timeout_seconds":"1"}`, nil, `Error: parameter "timeout_seconds" of watch_directory must be a number`},
		{"string for bool", "git_push", `{"force":"yes"}`, nil, `Error: parameter "force" of git_push must be a boolean`},
		{"not an array", "present_files", `{"paths":"a.txt"}`, nil, `Error: parameter "paths" of present_files must be an array`},
		{"array of ints", "present_files", `{"paths":[1]}`, nil, `Error: parameter "paths" of present_files must be an array of strings`},
		{"enum", "lsp_start", `{"language":"rust"}`, nil, `Error: parameter "language" of lsp_start must be one of go, python, typescript`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			f := &fake{}
			got := Call(ctx, ts, f, tt.tool, json.RawMessage(tt.args))
			if got != tt.want {
				t.Errorf("Call(%s, %s) = %q, want %q", tt.tool, tt.args, got, tt.want)
			}
			if len(f.calls) != 0 {
				t.Errorf("Call(%s, %s) reached the sandbox: %v", tt.tool, tt.args, f.calls)
			}
		})
	}
}

// TestAPIErrorText: a refusal's text names its stable code in brackets
// after "Error", then the message, then the hint on its own line, for
// every kind of refusal an agent meets; a refusal without a message or a
// code still reads as an error.
func TestAPIErrorText(t *testing.T) {
	checkRefusals(t, []refusal{
		{"not found", &api.Error{Code: api.CodeNotFound, Message: "sandbox sb-1 not found"}, "Error [not_found]: sandbox sb-1 not found", ""},
		{"limit with hint", &api.Error{Code: api.CodeLimitExceeded, Message: "exec refused: your account's JSON answers already hold 64 MiB", Hint: "stream the output instead"}, "Error [limit_exceeded]: exec refused: your account's JSON answers already hold 64 MiB\nHint: stream the output instead", ""},
		{"host capacity", &api.Error{Code: api.CodeHostCapacity, Message: "the server is out of room", Hint: "retry in a few seconds"}, "Error [host_capacity]: the server is out of room\nHint: retry in a few seconds", ""},
		{"validation", &api.Error{Code: api.CodeValidation, Message: "timeout must be between 1 and 600 seconds"}, "Error [validation_error]: timeout must be between 1 and 600 seconds", ""},
		{"rate limited", &api.Error{Code: api.CodeRateLimited, Message: "too many requests", Hint: "wait for Retry-After"}, "Error [rate_limited]: too many requests\nHint: wait for Retry-After", ""},
		{"no message", &api.Error{Code: api.CodeForbidden}, "Error [forbidden]: the sandbox refused the call", ""},
		{"no code", &api.Error{Message: "something odd", Hint: "try again"}, "Error: something odd\nHint: try again", ""},
	})
}

// refusal is an API refusal of a command and the text an agent reads for
// it: want with MCP's tools, wantDefault with Default's or a tool called
// alone ("": the same as want).
type refusal struct {
	name              string
	err               *api.Error
	want, wantDefault string
}

// checkRefusals runs each command refused with its error through MCP's
// exec, Default's bash_tool and bash_tool called alone, as an agent with
// each set calls it. A text under Default or alone names no tool the
// agent lacks.
func checkRefusals(t *testing.T, tests []refusal) {
	t.Helper()
	var others []string
	for _, tl := range append(All(), MCP(nil, nil)...) {
		if _, ok := Lookup(Default(), tl.Name); !ok {
			others = append(others, "`"+tl.Name+"`")
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{exec: func(api.ExecRequest) (*api.ExecResult, error) { return nil, tt.err }}
			ctx := context.Background()
			mcp := MCP(nil, func(string) Sandbox { return f })
			if got := Call(ctx, mcp, nil, "exec", json.RawMessage(`{"session_id":"sb1","command":"true"}`)); got != tt.want {
				t.Errorf("MCP's exec refused with %+v = %q, want %q", tt.err, got, tt.want)
			}
			want := tt.wantDefault
			if want == "" {
				want = tt.want
			}
			bash, _ := Lookup(Default(), "bash_tool")
			for how, got := range map[string]string{
				"Default's bash_tool": Call(ctx, Default(), f, "bash_tool", json.RawMessage(`{"command":"true"}`)),
				"bash_tool alone":     bash.Call(ctx, f, json.RawMessage(`{"command":"true"}`)),
			} {
				if got != want {
					t.Errorf("%s refused with %+v = %q, want %q", how, tt.err, got, want)
				}
				for _, name := range others {
					if strings.Contains(got, name) {
						t.Errorf("%s refused with %+v names %s, which the agent lacks: %q", how, tt.err, name, got)
					}
				}
			}
		})
	}
}

// TestErrorTexts covers how every handler reports the three kinds of
// failure a sandbox call has: an API refusal, a transport failure and a
// canceled context.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"api error with hint", apiErr(http.StatusForbidden, api.CodeSessionBudgetExceeded, "exec budget used up", "create a new sandbox"), "Error [session_budget_exceeded]: exec budget used up\nHint: create a new sandbox"},
		{"api error without message", &api.Error{Code: api.CodeInternal}, "Error [internal_error]: the sandbox refused the call"},
		{"wrapped api error", errors.Join(errors.New("proxy"), apiErr(404, api.CodeNotFound, "sandbox not found", "")), "Error [not_found]: sandbox not found"},
		{"transport", errors.New("dial unix /run/boxkite.sock: connection refused"), "Error: could not reach the sandbox (dial unix /run/boxkite.sock: connection refused)"},
		{"deadline", context.DeadlineExceeded, "Error: the call timed out before the sandbox answered"},
		{"transport with a hint", fmt.Errorf("exec: %w", hintedErr{}), "Error: could not reach the sandbox (exec: connection refused)\nHint: start the server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{exec: func(api.ExecRequest) (*api.ExecResult, error) { return nil, tt.err }}
			got := Call(context.Background(), Default(), f, "bash_tool", json.RawMessage(`{"command":"true"}`))
			if got != tt.want {
				t.Errorf("bash_tool with Exec error %v = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// hintedErr is a transport failure that says what to do, as client.ConnError does.
type hintedErr struct{}

func (hintedErr) Error() string { return "connection refused" }
func (hintedErr) Hint() string  { return "start the server" }

// TestAgentHint: an API refusal's hint names boxkite CLI commands, which
// an agent cannot run; the tools answer with the tool that does the same
// when the agent has it (MCP's tools have the sandbox lifecycle, Default's
// do not), and leave out an aside or clause naming a command with no such
// tool. The hints are the API's own (server/sandbox, server/model,
// server/exec).
func TestAgentHint(t *testing.T) {
	checkRefusals(t, []refusal{
		{
			"not found", &api.Error{Code: api.CodeNotFound, Message: "sandbox nope not found", Hint: "list your sandboxes with `boxkite session ls`"},
			"Error [not_found]: sandbox nope not found\nHint: list your sandboxes with `list_sandboxes`",
			"Error [not_found]: sandbox nope not found",
		},
		{
			"destroyed", &api.Error{Code: api.CodeConflict, Message: "sandbox sb1 is destroyed", Hint: "create a new sandbox with `boxkite session create`"},
			"Error [conflict]: sandbox sb1 is destroyed\nHint: create a new sandbox with `create_sandbox`",
			"Error [conflict]: sandbox sb1 is destroyed",
		},
		{
			"paused", &api.Error{Code: api.CodeConflict, Message: "sandbox sb1 is paused", Hint: "resume it first: `boxkite session resume sb1`"},
			"Error [conflict]: sandbox sb1 is paused\nHint: resume it first: `resume_sandbox` with session_id sb1",
			"Error [conflict]: sandbox sb1 is paused",
		},
		{
			"lost, aside without a tool", &api.Error{Code: api.CodeSandboxLost, Message: "sandbox sb1 was lost", Hint: "its processes and files are gone; create a new sandbox with `boxkite session create` (`boxkite log -s sb1` shows its history)"},
			"Error [sandbox_lost]: sandbox sb1 was lost\nHint: its processes and files are gone; create a new sandbox with `create_sandbox`",
			"Error [sandbox_lost]: sandbox sb1 was lost\nHint: its processes and files are gone",
		},
		{
			"quota", &api.Error{Code: api.CodeConcurrentSandboxLimit, Message: "2 of your sandboxes are running; at most 2 may run at once", Hint: "remove one with `boxkite session rm`, or wait for one to expire"},
			"Error [concurrent_sandbox_limit_reached]: 2 of your sandboxes are running; at most 2 may run at once\nHint: remove one with `destroy_sandbox`, or wait for one to expire",
			"Error [concurrent_sandbox_limit_reached]: 2 of your sandboxes are running; at most 2 may run at once",
		},
		{
			"host limit", &api.Error{Code: api.CodeHostCapacity, Message: "the host is full", Hint: "remove sandboxes you no longer need, or raise the limit (boxkite doctor says how)"},
			"Error [host_capacity]: the host is full\nHint: remove sandboxes you no longer need, or ask the server's operator to raise the limit",
			"",
		},
		{
			"held output, aside without a tool", &api.Error{Code: api.CodeLimitExceeded, Message: "exec refused", Hint: "stream the output instead (`Accept: application/x-ndjson`; `boxkite exec` streams), or ask for a smaller max_output_bytes"},
			"Error [limit_exceeded]: exec refused\nHint: stream the output instead, or ask for a smaller max_output_bytes",
			"",
		},
		{
			"clause without a tool", &api.Error{Code: api.CodeUnauthorized, Message: "no key", Hint: "send Authorization: Bearer <admin API key>; `boxkite ui` does"},
			"Error [unauthorized]: no key\nHint: send Authorization: Bearer <admin API key>",
			"",
		},
		{
			"only a command without a tool", &api.Error{Code: api.CodeNotFound, Message: "no such file", Hint: "list them with `boxkite files ls --from-storage`"},
			"Error [not_found]: no such file",
			"",
		},
		{
			"the client's bad response", &api.Error{Code: "bad_response", Message: "the server answered 200 text/html", Hint: "check the server URL (see `boxkite config show`) and any proxy in between"},
			"Error [bad_response]: the server answered 200 text/html\nHint: check the server URL (see `boxkite config show`) and any proxy in between",
			"",
		},
		{
			"single-quoted aside without a tool", &api.Error{Code: api.CodeValidation, Message: "nothing to install", Hint: "name what to install in apt_packages, python_packages or npm_packages ('boxkite images build --apt-package jq')"},
			"Error [validation_error]: nothing to install\nHint: name what to install in apt_packages, python_packages or npm_packages",
			"",
		},
		{
			"single-quoted clause without a tool", &api.Error{Code: api.CodeValidation, Message: "secret K has no value", Hint: "ask the server's operator; 'boxkite secrets set K' gives it one"},
			"Error [validation_error]: secret K has no value\nHint: ask the server's operator",
			"",
		},
		{
			"validation, no command", &api.Error{Code: api.CodeValidation, Message: "size_gb must be more than 0", Hint: "omit size_gb for the default of 1 GB"},
			"Error [validation_error]: size_gb must be more than 0\nHint: omit size_gb for the default of 1 GB",
			"",
		},
	})

	// Any command the tools stand for reads as its tool in single quotes
	// too, as the CLI quotes it (the sidecar's file refusals' ls and view:
	// TestFileRefusalHints).
	having := func(names ...string) func(string) bool {
		return func(tool string) bool { return slices.Contains(names, tool) }
	}
	for _, tt := range []struct {
		name, hint string
		has        func(string) bool
		want       string
	}{
		{"session ls quoted", "list your sandboxes with 'boxkite session ls'", having("list_sandboxes"), "list your sandboxes with `list_sandboxes`"},
		{"resume quoted with an id", "resume it first: 'boxkite session resume sb1'", having("resume_sandbox"), "resume it first: `resume_sandbox` with session_id sb1"},
		{"quoted without the tool", "resume it first: 'boxkite session resume sb1'", having("ls"), ""},
		// The sidecar's "Process not found": list_processes where the agent has it.
		{"ps", "list the sandbox's background processes and their ids with `boxkite ps`", having("list_processes"), "list the sandbox's background processes and their ids with `list_processes`"},
		{"ps without the tool", "list the sandbox's background processes and their ids with `boxkite ps`", having("exec"), ""},
	} {
		if got := agentHint(tt.hint, tt.has); got != tt.want {
			t.Errorf("%s: agentHint(%q) = %q, want %q", tt.name, tt.hint, got, tt.want)
		}
	}
}
