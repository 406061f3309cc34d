package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Default returns the 15 default tools of reference §4.1, in its order.
func Default() []Tool {
	return []Tool{
		bashTool(),
		pythonTool(),
		fileCreateTool(),
		viewTool(),
		strReplaceTool(),
		presentFilesTool(),
		lsTool(),
		globTool(),
		grepTool(),
		startProcessTool(),
		processOutputTool(),
		processInputTool(),
		stopProcessTool(),
		listProcessesTool(),
		watchTool(),
	}
}

// Limits of the default tools (reference §4.1).
const (
	bashDefaultTimeout = 120
	bashMaxTimeout     = 600
	pythonMaxTimeout   = api.MaxInterpreterTimeout
	watchMaxSeconds    = api.MaxWatchSeconds
)

// How bash_tool tells the agent to run long commands: with start_process
// when the agent has it, else with the shell (MCP's exec, the SDKs' four
// tools).
const (
	bashLongWithProcess = "Commands are killed at the timeout; use start_process for servers and long jobs."
	bashLongWithShell   = "Commands are killed at the timeout; start servers and long jobs in the background " +
		"(nohup CMD > out.log 2>&1 &) and read their log later."
	hintWithProcess = "run it in the background with start_process"
	hintWithShell   = "start it in the background with nohup CMD > out.log 2>&1 & and read out.log later"
)

func bashTool() Tool {
	return Tool{
		Name: "bash_tool",
		Description: "Run a shell command in the sandbox (/bin/sh -c, working directory /workspace) and return its output: " +
			"stdout, then stderr. A non-zero exit is reported as \"Error (exit code N):\" followed by the output. " + bashLongWithProcess,
		Schema: object(
			strParam("command", "The shell command to run.").req(),
			intParam("timeout", "Seconds before the command is killed (default 120, max 600).", bashDefaultTimeout, 1, bashMaxTimeout),
		),
		Handler: bashHandler("bash_tool", hintWithProcess),
	}
}

// fitSet returns ts with bash_tool speaking of the tools beside it: a set
// without start_process (the SDKs' four tools, --tools default without it)
// must not send the agent to a tool it does not have.
func fitSet(ts []Tool) []Tool {
	if _, ok := Lookup(ts, "start_process"); ok {
		return ts
	}
	i := slices.IndexFunc(ts, func(t Tool) bool { return t.Name == "bash_tool" })
	if i < 0 {
		return ts
	}
	ts = slices.Clone(ts)
	ts[i].Description = strings.Replace(ts[i].Description, bashLongWithProcess, bashLongWithShell, 1)
	ts[i].Handler = bashHandler("bash_tool", hintWithShell)
	return ts
}

// bashHandler runs a command for the tool name; background is how the
// timeout hint tells the agent to run a long command, in the terms of the
// tools it has (MCP's exec has no start_process beside it). A timeout out
// of [1, 600] is refused, as the REST API does.
func bashHandler(name, background string) Handler {
	return func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
		in := struct {
			Command string `json:"command"`
			Timeout int    `json:"timeout"`
		}{Timeout: bashDefaultTimeout}
		if msg := decode(name, args, &in); msg != "" {
			return msg, nil
		}
		if strings.TrimSpace(in.Command) == "" {
			return "Error: command must not be empty", nil
		}
		if msg := checkSeconds("timeout", float64(in.Timeout), 1, bashMaxTimeout, bashDefaultTimeout); msg != "" {
			return msg, nil
		}
		res, err := sb.Exec(ctx, api.ExecRequest{Command: in.Command, Timeout: in.Timeout})
		if text, done, err := result(ctx, err); done {
			return text, err
		}
		return execText(res, in.Timeout, background), nil
	}
}

// execText renders a command's result as bash_tool does: the output
// (redacted), a note when the server dropped some of it, an error header
// for a non-zero exit, hints for common failures.
func execText(res *api.ExecResult, timeout int, background string) string {
	out := Redact(combine(res.Stdout, res.Stderr))
	if res.ExitCode == 0 {
		if out == "" && !res.Truncated {
			return "(command completed with no output)"
		}
		return out + truncatedNote(res.ExecOutputInfo)
	}
	if out == "" {
		out = "(no output)"
	}
	text := fmt.Sprintf("Error (exit code %d):\n%s", res.ExitCode, out) + truncatedNote(res.ExecOutputInfo)
	hints := execHints(res.ExitCode, out, timeout, background)
	if res.StopReason == api.StopReasonMemoryLimit {
		hints = append(hints, memoryHint)
	}
	for _, h := range hints {
		text += "\n\nHint: " + h
	}
	return text
}

// memoryHint is the hint of a command the sandbox's memory limit killed
// (stop_reason memory_limit): the agent can use less; only whoever creates
// the sandbox can give it more.
const memoryHint = "the command was killed at the sandbox's memory limit (the kernel's OOM killer, exit code 137); " +
	"use less memory (process the data in parts, stream it instead of loading it whole, fewer parallel workers), " +
	"or ask for a sandbox of a larger size (more memory)."

// truncatedNote tells the agent that the output above is not all of it:
// without it, a cut at the server's cap reads like the command's end.
func truncatedNote(info api.ExecOutputInfo) string {
	if !info.Truncated {
		return ""
	}
	return fmt.Sprintf("\n\n(output truncated: the command wrote %d bytes to stdout and %d to stderr; only the first %d bytes of each are shown. "+
		"Redirect the output to a file and read it with view or grep.)", info.StdoutBytes, info.StderrBytes, info.OutputLimitBytes)
}

// combine joins stdout and stderr, one line apart, without trailing newlines.
func combine(stdout, stderr string) string {
	out := strings.TrimRight(stdout, "\n")
	if e := strings.TrimRight(stderr, "\n"); e != "" {
		if out != "" {
			out += "\n"
		}
		out += e
	}
	return out
}

var noModuleRE = regexp.MustCompile(`No module named '([A-Za-z0-9_.]+)'`)

// execHints are the reference's hints for failures an agent can fix itself.
func execHints(code int, out string, timeout int, background string) []string {
	var hints []string
	if m := noModuleRE.FindStringSubmatch(out); m != nil {
		pkg, _, _ := strings.Cut(m[1], ".")
		hints = append(hints, fmt.Sprintf("the Python module %s is not installed; install it with `pip install %s` if the sandbox has network access, or use what is installed (`pip list`).", m[1], pkg))
	}
	if strings.Contains(out, "Cannot find module") {
		hints = append(hints, "a Node.js module is missing; install it with `npm install <name>` in the project directory if the sandbox has network access.")
	}
	if code == 127 || strings.Contains(out, "command not found") || strings.Contains(out, ": not found") {
		hints = append(hints, "the command is not installed in this sandbox or not on PATH; check its name, or look for an alternative with `ls /usr/bin /usr/local/bin`.")
	}
	if code == api.ExitCodeTimeout && strings.Contains(out, "timed out") {
		hints = append(hints, fmt.Sprintf("the command hit its timeout of %ds; pass a larger timeout (max %d) or %s.", timeout, bashMaxTimeout, background))
	}
	return hints
}

func pythonTool() Tool {
	return Tool{
		Name: "python_interpreter",
		Description: "Run Python code in a persistent interpreter in the sandbox: variables, imports and functions survive between calls. " +
			"Returns what the code printed and the value of its last expression, or the traceback if it raised.",
		Schema: object(
			strParam("code", "The Python code to run.").req(),
			intParam("timeout", "Seconds before the interpreter is stopped (default 30, max 300).", api.DefaultInterpreterTimeout, 1, pythonMaxTimeout),
		),
		Handler: interpreterHandler("python_interpreter", "the Python interpreter", func(sb Sandbox) (interpreterRun, bool) {
			ip, ok := sb.(Interpreter)
			if !ok {
				return nil, false
			}
			return ip.InterpreterExec, true
		}),
	}
}

// interpreterRun is an interpreter's exec call, as a sandbox offers it.
type interpreterRun func(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error)

// interpreterHandler is the Handler of the interpreter tool name: it runs
// the code with the interpreter find returns, which is what for a
// sandbox without it.
func interpreterHandler(name, what string, find func(Sandbox) (interpreterRun, bool)) Handler {
	return func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
		in := struct {
			Code    string `json:"code"`
			Timeout int    `json:"timeout"`
		}{Timeout: api.DefaultInterpreterTimeout}
		if msg := decode(name, args, &in); msg != "" {
			return msg, nil
		}
		if strings.TrimSpace(in.Code) == "" {
			return "Error: code must not be empty", nil
		}
		if msg := checkSeconds("timeout", float64(in.Timeout), 1, pythonMaxTimeout, api.DefaultInterpreterTimeout); msg != "" {
			return msg, nil
		}
		run, ok := find(sb)
		if !ok {
			return unsupported(what), nil
		}
		res, err := run(ctx, api.InterpreterExecRequest{Code: in.Code, Timeout: in.Timeout})
		if text, done, err := result(ctx, err); done {
			return text, err
		}
		return interpreterText(res), nil
	}
}

func watchTool() Tool {
	return Tool{
		Name: "watch_directory",
		Description: "Wait until something in a sandbox directory changes (a file created, modified, deleted or moved) or the timeout passes, " +
			"and list the changes. Use it to wait for a build or a background process to write its output instead of polling.",
		Schema: object(
			strParam("path", "The directory to watch (default \"/\", the workspace).").dflt("/"),
			numParam("timeout_seconds", "Seconds to wait for a change (default 10, max 60).", api.DefaultWatchSeconds, api.MinWatchSeconds, watchMaxSeconds),
		),
		Handler: runWatch,
	}
}

func runWatch(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Path    string  `json:"path"`
		Timeout float64 `json:"timeout_seconds"`
	}{Path: "/", Timeout: api.DefaultWatchSeconds}
	if msg := decode("watch_directory", args, &in); msg != "" {
		return msg, nil
	}
	if in.Path == "" {
		in.Path = "/"
	}
	if msg := checkSeconds("timeout_seconds", in.Timeout, api.MinWatchSeconds, watchMaxSeconds, api.DefaultWatchSeconds); msg != "" {
		return msg, nil
	}
	res, err := sb.Watch(ctx, api.WatchRequest{Path: in.Path, TimeoutSeconds: in.Timeout})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	if len(res.Changes) == 0 {
		return fmt.Sprintf("No changes under %s within %ss.", in.Path, strconv.FormatFloat(in.Timeout, 'f', -1, 64)), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Changes under %s:", in.Path)
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "\n%s: %s", c.Event, c.Path)
	}
	return b.String(), nil
}
