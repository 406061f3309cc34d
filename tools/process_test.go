package tools

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

const pid = "proc_0123456789abcdef0123456789abcdef"

func TestStartProcess(t *testing.T) {
	started := func(api.ProcessStartRequest) (*api.ProcessStarted, error) {
		return &api.ProcessStarted{ProcessID: pid, Status: api.ProcessRunning}, nil
	}
	runTool(t, "start_process", []toolCase{
		{
			name:  "started",
			args:  `{"command":"python3 -m http.server 8000","description":"docs server"}`,
			fake:  fake{startProcess: started},
			want:  "Started process " + pid + " (status: running)\nRead its output with get_process_output(process_id=\"" + pid + "\"); stop it with stop_process.",
			calls: []call{{"StartProcess", api.ProcessStartRequest{Command: "python3 -m http.server 8000", Description: "docs server", MaxRuntimeSeconds: 3600}}},
		},
		{
			name:  "runtime at the maximum",
			args:  `{"command":"x","max_runtime_seconds":14400}`,
			fake:  fake{startProcess: started},
			want:  "Started process " + pid + " (status: running)\nRead its output with get_process_output(process_id=\"" + pid + "\"); stop it with stop_process.",
			calls: []call{{"StartProcess", api.ProcessStartRequest{Command: "x", MaxRuntimeSeconds: api.MaxProcessRuntime}}},
		},
		{
			name: "runtime above the maximum",
			args: `{"command":"x","max_runtime_seconds":99999}`,
			want: "Error: max_runtime_seconds must be between 1 and 14400 seconds, got 99999\nHint: omit max_runtime_seconds for the default of 3600 seconds.",
		},
		{
			name: "too many",
			args: `{"command":"x"}`,
			fake: fake{startProcess: func(api.ProcessStartRequest) (*api.ProcessStarted, error) {
				return nil, apiErr(http.StatusTooManyRequests, api.CodeLimitExceeded, "4 background processes are running; the limit is 4", "stop one with stop_process")
			}},
			want:  "Error [limit_exceeded]: 4 background processes are running; the limit is 4\nHint: stop one with stop_process",
			calls: []call{{"StartProcess", api.ProcessStartRequest{Command: "x", MaxRuntimeSeconds: 3600}}},
		},
		{name: "unsupported", args: `{"command":"x"}`, bare: true, want: "Error: this sandbox does not support background processes"},
		{name: "empty", args: `{"command":""}`, want: "Error: command must not be empty"},
	})
}

func TestGetProcessOutput(t *testing.T) {
	ret := func(r api.ProcessOutput) func(string, int64) (*api.ProcessOutput, error) {
		return func(string, int64) (*api.ProcessOutput, error) { return &r, nil }
	}
	runTool(t, "get_process_output", []toolCase{
		{
			name:  "running",
			args:  `{"process_id":"` + pid + `"}`,
			fake:  fake{processOutput: ret(api.ProcessOutput{Status: api.ProcessRunning, StdoutChunk: "Serving on :8000\n", NextOffset: 17})},
			want:  "Process " + pid + ": running\nServing on :8000\nNext offset: 17",
			calls: []call{{"ProcessOutput", idReq{pid, int64(0)}}},
		},
		{
			name:  "exited, nothing new",
			args:  `{"process_id":"` + pid + `","since_offset":17}`,
			fake:  fake{processOutput: ret(api.ProcessOutput{Status: api.ProcessExited, NextOffset: 17, ExitCode: intp(0)})},
			want:  "Process " + pid + ": exited (exit_code=0)\n(no new output)\nNext offset: 17",
			calls: []call{{"ProcessOutput", idReq{pid, int64(17)}}},
		},
		{
			name: "truncated and redacted",
			args: `{"process_id":"` + pid + `","since_offset":-5}`,
			fake: fake{processOutput: ret(api.ProcessOutput{
				Status: api.ProcessKilled, StdoutChunk: "token: Bearer abcdefghijklmnopqrstuvwxyz\n", NextOffset: 300000, Truncated: true, ExitCode: intp(137),
			})},
			want:  "Process " + pid + ": killed (exit_code=137)\n(older output was dropped from the buffer; this is all that is kept)\ntoken: Bearer [REDACTED]\nNext offset: 300000",
			calls: []call{{"ProcessOutput", idReq{pid, int64(0)}}},
		},
		{
			name: "unknown",
			args: `{"process_id":"proc_x"}`,
			fake: fake{processOutput: func(string, int64) (*api.ProcessOutput, error) {
				return nil, apiErr(http.StatusNotFound, api.CodeNotFound, "process proc_x not found", "")
			}},
			want:  "Error [not_found]: process proc_x not found",
			calls: []call{{"ProcessOutput", idReq{"proc_x", int64(0)}}},
		},
		{name: "bad id", args: `{"process_id":"../../kill-all"}`, want: `Error: process_id "../../kill-all" is not a valid id`},
	})
}

func TestSendProcessInput(t *testing.T) {
	runTool(t, "send_process_input", []toolCase{
		{
			name: "written",
			args: `{"process_id":"` + pid + `","data":"yes\n"}`,
			fake: fake{processInput: func(_, data string) (*api.ProcessInputResult, error) {
				return &api.ProcessInputResult{BytesWritten: len(data)}, nil
			}},
			want:  "Wrote 4 bytes to process " + pid,
			calls: []call{{"SendProcessInput", idReq{pid, "yes\n"}}},
		},
		{
			name: "not running",
			args: `{"process_id":"` + pid + `","data":"q"}`,
			fake: fake{processInput: func(string, string) (*api.ProcessInputResult, error) {
				return nil, apiErr(http.StatusConflict, api.CodeConflict, "process is not running", "")
			}},
			want:  "Error [conflict]: process is not running",
			calls: []call{{"SendProcessInput", idReq{pid, "q"}}},
		},
		{name: "missing data", args: `{"process_id":"` + pid + `"}`, want: `Error: send_process_input needs the parameter "data"`},
	})
}

func TestStopProcess(t *testing.T) {
	runTool(t, "stop_process", []toolCase{
		{
			name: "stopped",
			args: `{"process_id":"` + pid + `"}`,
			fake: fake{stopProcess: func(string) (*api.ProcessStopResult, error) {
				return &api.ProcessStopResult{Status: api.ProcessStopped, ExitCode: intp(-15)}, nil
			}},
			want:  "Process " + pid + ": stopped (exit_code=-15)",
			calls: []call{{"StopProcess", idReq{pid, nil}}},
		},
		{
			name: "no exit code",
			args: `{"process_id":"` + pid + `"}`,
			fake: fake{stopProcess: func(string) (*api.ProcessStopResult, error) {
				return &api.ProcessStopResult{Status: api.ProcessExited}, nil
			}},
			want:  "Process " + pid + ": exited",
			calls: []call{{"StopProcess", idReq{pid, nil}}},
		},
	})
}

func TestListProcesses(t *testing.T) {
	runTool(t, "list_processes", []toolCase{
		{
			name: "two",
			args: ``,
			fake: fake{listProcesses: func() (*api.ProcessList, error) {
				return &api.ProcessList{Processes: []api.ProcessInfo{
					{ProcessID: "proc_a", Command: "npm run dev", Description: "frontend", Status: api.ProcessRunning},
					{ProcessID: "proc_b", Command: "make test", Status: api.ProcessExited, ExitCode: intp(2)},
				}}, nil
			}},
			want:  "proc_a  running  npm run dev  # frontend\nproc_b  exited (exit_code=2)  make test",
			calls: []call{{"ListProcesses", nil}},
		},
		{
			name:  "none",
			args:  `{}`,
			fake:  fake{listProcesses: func() (*api.ProcessList, error) { return &api.ProcessList{}, nil }},
			want:  "(no background processes)",
			calls: []call{{"ListProcesses", nil}},
		},
	})
}

func TestLSPTools(t *testing.T) {
	items := func(raw ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(raw))
		for i, r := range raw {
			out[i] = json.RawMessage(r)
		}
		return out
	}
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt. }\n"
	viewSrc := func(api.ViewRequest) (*api.ViewResult, error) { return &api.ViewResult{Content: src, Lines: 5}, nil }
	completionCalls := []call{
		{"View", api.ViewRequest{Path: "main.go"}},
		{"LSPOpen", idReq{"lsp_1", api.LSPOpenRequest{Path: "main.go", Content: src}}},
		{"LSPCompletion", idReq{"lsp_1", api.LSPCompletionRequest{Path: "main.go", Line: 4, Character: 18}}},
	}
	t.Run("lsp_start", func(t *testing.T) {
		runTool(t, "lsp_start", []toolCase{
			{
				name:  "started",
				args:  `{"language":"go"}`,
				fake:  fake{lspStart: func(api.LSPStartRequest) (*api.LSPStarted, error) { return &api.LSPStarted{LSPID: "lsp_1"}, nil }},
				want:  "Started language server lsp_1 for go",
				calls: []call{{"LSPStart", api.LSPStartRequest{Language: "go"}}},
			},
			{name: "unsupported", args: `{"language":"python"}`, bare: true, want: "Error: this sandbox does not support language servers"},
		})
	})
	t.Run("lsp_completion", func(t *testing.T) {
		many := make([]string, 102)
		for i := range many {
			many[i] = `{"label":"x"}`
		}
		runTool(t, "lsp_completion", []toolCase{
			{
				name: "items",
				args: `{"lsp_id":"lsp_1","path":"main.go","line":4,"character":18}`,
				fake: fake{
					view:    viewSrc,
					lspOpen: func(string, api.LSPOpenRequest) error { return nil },
					lspCompletion: func(string, api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
						return &api.LSPCompletionResult{Items: items(
							`{"label":"Println","kind":3,"detail":"func(a ...any) (n int, err error)","insertText":"Println"}`,
							`{"label":"Errorf","kind":3,"insertText":"Errorf(${1:format})"}`,
							`{"label":"Stringer","kind":8}`,
							`{"label":"weird","kind":99}`,
							`"not an item"`,
						)}, nil
					},
				},
				want:  "- Println (Function): func(a ...any) (n int, err error)\n- Errorf (Function)  insert: Errorf(${1:format})\n- Stringer (Interface)\n- weird",
				calls: completionCalls,
			},
			{
				name: "none",
				args: `{"lsp_id":"lsp_1","path":"main.go","line":4,"character":18}`,
				fake: fake{
					view:    viewSrc,
					lspOpen: func(string, api.LSPOpenRequest) error { return nil },
					lspCompletion: func(string, api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
						return &api.LSPCompletionResult{}, nil
					},
				},
				want:  "(no completions)",
				calls: completionCalls,
			},
			{
				name: "capped",
				args: `{"lsp_id":"lsp_1","path":"main.go","line":4,"character":18}`,
				fake: fake{
					view:    viewSrc,
					lspOpen: func(string, api.LSPOpenRequest) error { return nil },
					lspCompletion: func(string, api.LSPCompletionRequest) (*api.LSPCompletionResult, error) {
						return &api.LSPCompletionResult{Items: items(many...)}, nil
					},
				},
				want:  stringsRepeatLines("- x", 100) + "\n... and 2 more",
				calls: completionCalls,
			},
			{
				name: "file missing",
				args: `{"lsp_id":"lsp_1","path":"main.go","line":0,"character":0}`,
				fake: fake{view: func(api.ViewRequest) (*api.ViewResult, error) {
					return nil, apiErr(http.StatusNotFound, api.CodeNotFound, "File not found: main.go", "")
				}},
				want:  "Error [not_found]: File not found: main.go",
				calls: []call{{"View", api.ViewRequest{Path: "main.go"}}},
			},
			{
				name: "unknown server",
				args: `{"lsp_id":"lsp_9","path":"main.go","line":0,"character":0}`,
				fake: fake{view: viewSrc, lspOpen: func(string, api.LSPOpenRequest) error {
					return apiErr(http.StatusNotFound, api.CodeNotFound, "language server lsp_9 not found", "start one with lsp_start")
				}},
				want: "Error [not_found]: language server lsp_9 not found\nHint: start one with lsp_start",
				calls: []call{
					{"View", api.ViewRequest{Path: "main.go"}},
					{"LSPOpen", idReq{"lsp_9", api.LSPOpenRequest{Path: "main.go", Content: src}}},
				},
			},
			{name: "negative", args: `{"lsp_id":"lsp_1","path":"a.go","line":-1,"character":0}`, want: "Error: line and character are 0-based and must not be negative"},
			{name: "missing position", args: `{"lsp_id":"lsp_1","path":"a.go"}`, want: `Error: lsp_completion needs the parameter "line", "character"`},
		})
	})
	t.Run("lsp_stop", func(t *testing.T) {
		runTool(t, "lsp_stop", []toolCase{
			{
				name:  "stopped",
				args:  `{"lsp_id":"lsp_1"}`,
				fake:  fake{lspStop: func(string) error { return nil }},
				want:  "Stopped language server lsp_1",
				calls: []call{{"LSPStop", idReq{"lsp_1", nil}}},
			},
		})
	})
}

func stringsRepeatLines(line string, n int) string {
	out := line
	for range n - 1 {
		out += "\n" + line
	}
	return out
}
