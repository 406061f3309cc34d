package tools

import (
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

func execReturns(stdout, stderr string, code int) func(api.ExecRequest) (*api.ExecResult, error) {
	return func(api.ExecRequest) (*api.ExecResult, error) {
		return &api.ExecResult{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
	}
}

func TestBashTool(t *testing.T) {
	execCall := func(cmd string, timeout int) []call {
		return []call{{"Exec", api.ExecRequest{Command: cmd, Timeout: timeout}}}
	}
	runTool(t, "bash_tool", []toolCase{
		{
			name:  "stdout then stderr",
			args:  `{"command":"make"}`,
			fake:  fake{exec: execReturns("built\n", "warning: x\n", 0)},
			want:  "built\nwarning: x",
			calls: execCall("make", 120),
		},
		{
			name:  "stderr only",
			args:  `{"command":"make"}`,
			fake:  fake{exec: execReturns("", "warning: x\n", 0)},
			want:  "warning: x",
			calls: execCall("make", 120),
		},
		{
			name:  "no output",
			args:  `{"command":"true","timeout":5}`,
			fake:  fake{exec: execReturns("", "", 0)},
			want:  "(command completed with no output)",
			calls: execCall("true", 5),
		},
		{
			name:  "non-zero exit",
			args:  `{"command":"ls x"}`,
			fake:  fake{exec: execReturns("", "ls: cannot access 'x': No such file or directory\n", 2)},
			want:  "Error (exit code 2):\nls: cannot access 'x': No such file or directory",
			calls: execCall("ls x", 120),
		},
		{
			name:  "non-zero exit without output",
			args:  `{"command":"false"}`,
			fake:  fake{exec: execReturns("", "", 1)},
			want:  "Error (exit code 1):\n(no output)",
			calls: execCall("false", 120),
		},
		{
			name:  "command not found",
			args:  `{"command":"cargo build"}`,
			fake:  fake{exec: execReturns("", "sh: 1: cargo: not found\n", 127)},
			want:  "Error (exit code 127):\nsh: 1: cargo: not found\n\nHint: the command is not installed in this sandbox or not on PATH; check its name, or look for an alternative with `ls /usr/bin /usr/local/bin`.",
			calls: execCall("cargo build", 120),
		},
		{
			name: "missing python module",
			args: `{"command":"python3 -c 'import numpy.linalg'"}`,
			fake: fake{exec: execReturns("", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'numpy.linalg'\n", 1)},
			want: "Error (exit code 1):\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'numpy.linalg'\n\n" +
				"Hint: the Python module numpy.linalg is not installed; install it with `pip install numpy` if the sandbox has network access, or use what is installed (`pip list`).",
			calls: execCall("python3 -c 'import numpy.linalg'", 120),
		},
		{
			name: "missing node module",
			args: `{"command":"node app.js"}`,
			fake: fake{exec: execReturns("", "Error: Cannot find module 'express'\n", 1)},
			want: "Error (exit code 1):\nError: Cannot find module 'express'\n\n" +
				"Hint: a Node.js module is missing; install it with `npm install <name>` in the project directory if the sandbox has network access.",
			calls: execCall("node app.js", 120),
		},
		{
			name: "timeout",
			args: `{"command":"sleep 100","timeout":5}`,
			fake: fake{exec: execReturns("", "Command timed out after 5s", api.ExitCodeTimeout)},
			want: "Error (exit code 124):\nCommand timed out after 5s\n\n" +
				"Hint: the command hit its timeout of 5s; pass a larger timeout (max 600) or run it in the background with start_process.",
			calls: execCall("sleep 100", 5),
		},
		{
			name: "killed at the memory limit",
			args: `{"command":"python3 big.py"}`,
			fake: fake{exec: func(api.ExecRequest) (*api.ExecResult, error) {
				return &api.ExecResult{Stderr: "Killed\n", ExitCode: api.ExitCodeKilled, ExecOutputInfo: api.ExecOutputInfo{StopReason: api.StopReasonMemoryLimit}}, nil
			}},
			want: "Error (exit code 137):\nKilled\n\n" +
				"Hint: the command was killed at the sandbox's memory limit (the kernel's OOM killer, exit code 137); " +
				"use less memory (process the data in parts, stream it instead of loading it whole, fewer parallel workers), or ask for a sandbox of a larger size (more memory).",
			calls: execCall("python3 big.py", 120),
		},
		{
			name:  "a kill -9 is just an exit code",
			args:  `{"command":"kill -9 $$"}`,
			fake:  fake{exec: execReturns("", "", api.ExitCodeKilled)},
			want:  "Error (exit code 137):\n(no output)",
			calls: execCall("kill -9 $$", 120),
		},
		{
			name: "output truncated by the server",
			args: `{"command":"seq 1 9999999"}`,
			fake: fake{exec: func(api.ExecRequest) (*api.ExecResult, error) {
				return &api.ExecResult{Stdout: "1\n2\n3", ExecOutputInfo: api.ExecOutputInfo{
					Truncated: true, StdoutBytes: 78888888, StderrBytes: 0, OutputLimitBytes: 5,
				}}, nil
			}},
			want: "1\n2\n3\n\n(output truncated: the command wrote 78888888 bytes to stdout and 0 to stderr; only the first 5 bytes of each are shown. " +
				"Redirect the output to a file and read it with view or grep.)",
			calls: execCall("seq 1 9999999", 120),
		},
		{
			name: "output truncated on failure",
			args: `{"command":"make"}`,
			fake: fake{exec: func(api.ExecRequest) (*api.ExecResult, error) {
				return &api.ExecResult{Stderr: "err", ExitCode: 2, ExecOutputInfo: api.ExecOutputInfo{
					Truncated: true, StderrBytes: 9000, OutputLimitBytes: 3,
				}}, nil
			}},
			want: "Error (exit code 2):\nerr\n\n(output truncated: the command wrote 0 bytes to stdout and 9000 to stderr; only the first 3 bytes of each are shown. " +
				"Redirect the output to a file and read it with view or grep.)",
			calls: execCall("make", 120),
		},
		{
			// JSON Schema's integer: clients that keep numbers as doubles send 5.0.
			name:  "integer sent as 5.0",
			args:  `{"command":"x","timeout":5.0}`,
			fake:  fake{exec: execReturns("ok", "", 0)},
			want:  "ok",
			calls: execCall("x", 5),
		},
		{
			name: "fractional timeout",
			args: `{"command":"x","timeout":5.5}`,
			want: `Error: parameter "timeout" of bash_tool must be an integer`,
		},
		{
			name:  "timeout at the maximum",
			args:  `{"command":"x","timeout":600}`,
			fake:  fake{exec: execReturns("ok", "", 0)},
			want:  "ok",
			calls: execCall("x", 600),
		},
		{
			name: "timeout above the maximum",
			args: `{"command":"x","timeout":9999}`,
			want: "Error: timeout must be between 1 and 600 seconds, got 9999\nHint: omit timeout for the default of 120 seconds.",
		},
		{
			name: "timeout below the minimum",
			args: `{"command":"x","timeout":-3}`,
			want: "Error: timeout must be between 1 and 600 seconds, got -3\nHint: omit timeout for the default of 120 seconds.",
		},
		{
			name:  "secrets redacted",
			args:  `{"command":"env"}`,
			fake:  fake{exec: execReturns("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nHOME=/workspace\n", "", 0)},
			want:  "AWS_ACCESS_KEY_ID=[REDACTED_AWS_KEY]\nHOME=/workspace",
			calls: execCall("env", 120),
		},
		{
			name:  "secrets redacted on failure",
			args:  `{"command":"x"}`,
			fake:  fake{exec: execReturns("", "bad token ghp_0123456789abcdefghijABCDEFGHIJ012345\n", 1)},
			want:  "Error (exit code 1):\nbad token [REDACTED_GITHUB_TOKEN]",
			calls: execCall("x", 120),
		},
		{
			name: "budget refusal",
			args: `{"command":"x"}`,
			fake: fake{exec: func(api.ExecRequest) (*api.ExecResult, error) {
				return nil, apiErr(http.StatusForbidden, api.CodeSessionBudgetExceeded, "exec budget exceeded: 500 calls", "")
			}},
			want:  "Error [session_budget_exceeded]: exec budget exceeded: 500 calls",
			calls: execCall("x", 120),
		},
		{
			name: "blank command",
			args: `{"command":"  "}`,
			want: "Error: command must not be empty",
		},
	})
}

func TestPythonInterpreter(t *testing.T) {
	ipCall := func(code string, timeout int) []call {
		return []call{{"InterpreterExec", api.InterpreterExecRequest{Code: code, Timeout: timeout}}}
	}
	ret := func(r api.InterpreterExecResult) func(api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
		return func(api.InterpreterExecRequest) (*api.InterpreterExecResult, error) { return &r, nil }
	}
	runTool(t, "python_interpreter", []toolCase{
		{
			name:  "stdout and result",
			args:  `{"code":"print('hi')\n1+1"}`,
			fake:  fake{interpreter: ret(api.InterpreterExecResult{Stdout: "hi\n", Result: strp("2")})},
			want:  "hi\n2",
			calls: ipCall("print('hi')\n1+1", 30),
		},
		{
			name:  "result only",
			args:  `{"code":"x","timeout":300}`,
			fake:  fake{interpreter: ret(api.InterpreterExecResult{Result: strp("'abc'")})},
			want:  "'abc'",
			calls: ipCall("x", 300),
		},
		{
			name:  "traceback after output",
			args:  `{"code":"print(1); 1/0"}`,
			fake:  fake{interpreter: ret(api.InterpreterExecResult{Stdout: "1\n", Error: strp("Traceback (most recent call last):\nZeroDivisionError: division by zero\n")})},
			want:  "1\nError:\nTraceback (most recent call last):\nZeroDivisionError: division by zero",
			calls: ipCall("print(1); 1/0", 30),
		},
		{
			name:  "nothing",
			args:  `{"code":"x = 1"}`,
			fake:  fake{interpreter: ret(api.InterpreterExecResult{})},
			want:  "(no output)",
			calls: ipCall("x = 1", 30),
		},
		{
			name:  "truncated and redacted",
			args:  `{"code":"dump()"}`,
			fake:  fake{interpreter: ret(api.InterpreterExecResult{Stdout: "password=hunter2hunter2\n", Truncated: true})},
			want:  "password=[REDACTED]\n... (output truncated)",
			calls: ipCall("dump()", 30),
		},
		{
			name: "interpreter crashed",
			args: `{"code":"import os; os._exit(1)"}`,
			fake: fake{interpreter: func(api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
				return nil, apiErr(http.StatusBadGateway, api.CodeSandboxFailed, "interpreter died", "its state was lost; run python_interpreter again")
			}},
			want:  "Error [sandbox_operation_failed]: interpreter died\nHint: its state was lost; run python_interpreter again",
			calls: ipCall("import os; os._exit(1)", 30),
		},
		{
			name: "unsupported",
			args: `{"code":"1"}`,
			bare: true,
			want: "Error: this sandbox does not support the Python interpreter",
		},
		{
			name: "empty code",
			args: `{"code":""}`,
			want: "Error: code must not be empty",
		},
	})
}

func TestWatchDirectory(t *testing.T) {
	ret := func(r api.WatchResult) func(api.WatchRequest) (*api.WatchResult, error) {
		return func(api.WatchRequest) (*api.WatchResult, error) { return &r, nil }
	}
	runTool(t, "watch_directory", []toolCase{
		{
			name: "changes",
			args: `{"path":"build"}`,
			fake: fake{watch: ret(api.WatchResult{Changes: []api.WatchChange{
				{Path: "out.bin", Event: api.WatchCreated}, {Path: "log.txt", Event: api.WatchModified},
			}})},
			want:  "Changes under build:\ncreated: out.bin\nmodified: log.txt",
			calls: []call{{"Watch", api.WatchRequest{Path: "build", TimeoutSeconds: 10}}},
		},
		{
			name:  "nothing, defaults",
			args:  `{}`,
			fake:  fake{watch: ret(api.WatchResult{TimedOut: true})},
			want:  "No changes under / within 10s.",
			calls: []call{{"Watch", api.WatchRequest{Path: "/", TimeoutSeconds: 10}}},
		},
		{
			name:  "fractional timeout",
			args:  `{"timeout_seconds":0.5}`,
			fake:  fake{watch: ret(api.WatchResult{TimedOut: true})},
			want:  "No changes under / within 0.5s.",
			calls: []call{{"Watch", api.WatchRequest{Path: "/", TimeoutSeconds: 0.5}}},
		},
		{
			name:  "timeout at the maximum",
			args:  `{"timeout_seconds":60,"path":""}`,
			fake:  fake{watch: ret(api.WatchResult{TimedOut: true})},
			want:  "No changes under / within 60s.",
			calls: []call{{"Watch", api.WatchRequest{Path: "/", TimeoutSeconds: 60}}},
		},
		{
			name: "timeout above the maximum",
			args: `{"timeout_seconds":600,"path":""}`,
			want: "Error: timeout_seconds must be between 0.1 and 60 seconds, got 600\nHint: omit timeout_seconds for the default of 10 seconds.",
		},
		{
			name: "not a directory",
			args: `{"path":"a.txt"}`,
			fake: fake{watch: func(api.WatchRequest) (*api.WatchResult, error) {
				// The sidecar's answer (errNotDirectory).
				return nil, apiErr(400, api.CodeNotADirectory, "Not a directory: a.txt", "name a directory; read a file with 'boxkite files view PATH'")
			}},
			// Alone, without view: the clause naming it is left out
			// (TestFileRefusalHints has it with view).
			want:  "Error [not_a_directory]: Not a directory: a.txt\nHint: name a directory",
			calls: []call{{"Watch", api.WatchRequest{Path: "a.txt", TimeoutSeconds: 10}}},
		},
	})
}
