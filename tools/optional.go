package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The opt-in tools (reference §4.2): off unless an agent builder enables
// them, by name, in `boxkite tools export --tools`, boxkite-mcp --enable or
// the hosted /mcp/?enable=.

// HTTPRequester makes HTTP requests through the control plane's secrets
// broker (http_request): {{secret:NAME}} is filled in by the server, never
// in the sandbox.
type HTTPRequester interface {
	HTTPRequest(ctx context.Context, req api.HTTPRequest) (*api.HTTPResponse, error)
}

// Optional returns every opt-in tool, in a stable order.
func Optional() []Tool {
	return append([]Tool{httpRequestTool(), ptyExecTool(), nodeInterpreterTool(), runTestsTool()}, browserTools()...)
}

// OptionalNames are the names of the opt-in tools.
func OptionalNames() []string {
	var out []string
	for _, t := range Optional() {
		out = append(out, t.Name)
	}
	return out
}

// Enabled returns the opt-in tools named, each once, in Optional's order;
// an unknown name is an error naming the known ones.
func Enabled(names []string) ([]Tool, error) {
	known := OptionalNames()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("%q is not an opt-in tool; they are %s", n, strings.Join(known, ", "))
		}
	}
	var out []Tool
	for _, t := range Optional() {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out, nil
}

const httpRequestMaxTimeout = api.MaxHTTPRequestTimeout

func httpRequestTool() Tool {
	return Tool{
		Name: "http_request",
		Description: "Make an HTTP request from the boxkite server (not the sandbox) and return the status, headers and body. " +
			"Write {{secret:NAME}} in the URL's path or query, a header value or the body where a secret's value goes: " +
			"the server fills it in, so you never see it, and only sends it over https (port 443) to the hosts that secret allows. " +
			"Echoes of a secret in the answer read [REDACTED_SECRET:NAME].",
		Schema: object(
			strParam("method", "The HTTP method, e.g. GET or POST.").req(),
			strParam("url", "The absolute http or https URL.").req(),
			param{name: "headers", typ: "object", desc: "Request headers, name to value; values may hold {{secret:NAME}}."},
			strParam("body", "The request body."),
			intParam("timeout", "Seconds to wait for the answer (default 15, max 60).", api.DefaultHTTPRequestTimeout, 1, httpRequestMaxTimeout),
		),
		Handler: runHTTPRequest,
	}
}

func runHTTPRequest(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
		Timeout int               `json:"timeout"`
	}{Timeout: api.DefaultHTTPRequestTimeout}
	if msg := decode("http_request", args, &in); msg != "" {
		return msg, nil
	}
	if msg := checkSeconds("timeout", float64(in.Timeout), 1, httpRequestMaxTimeout, api.DefaultHTTPRequestTimeout); msg != "" {
		return msg, nil
	}
	hr, ok := sb.(HTTPRequester)
	if !ok {
		return unsupported("HTTP requests through the secrets broker"), nil
	}
	res, err := hr.HTTPRequest(ctx, api.HTTPRequest{
		Method: in.Method, URL: in.URL, Headers: in.Headers, Body: in.Body,
		Timeout: in.Timeout,
	})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	return httpResponseText(res), nil
}

// httpResponseText renders an answer: a status line, the headers sorted,
// a blank line and the body (already redacted of the secrets used by the
// server; the regex redaction of every tool runs over it too).
func httpResponseText(res *api.HTTPResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", res.StatusCode)
	names := make([]string, 0, len(res.Headers))
	for k := range res.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, res.Headers[k])
	}
	b.WriteString("\n")
	b.WriteString(res.Body)
	if res.Truncated {
		b.WriteString("\n... (body truncated at 1 MiB)")
	}
	if len(res.SecretsUsed) > 0 {
		fmt.Fprintf(&b, "\n(secrets used: %s)", strings.Join(res.SecretsUsed, ", "))
	}
	return Redact(b.String())
}

// NodeInterpreter runs JavaScript in the sandbox's persistent Node.js
// interpreter (node_interpreter).
type NodeInterpreter interface {
	NodeInterpreterExec(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error)
}

// PTYExecer runs a command on a terminal of its own (pty_exec).
type PTYExecer interface {
	PTYExec(ctx context.Context, req api.PTYExecRequest) (*api.PTYExecResult, error)
}

func nodeInterpreterTool() Tool {
	return Tool{
		Name: "node_interpreter",
		Description: "Run JavaScript in a persistent Node.js interpreter in the sandbox: variables, functions and required modules survive between calls. " +
			"Returns what the code printed and the value of its last expression (a promise is awaited: end with one, since top-level await is a syntax error), or the error's stack.",
		Schema: object(
			strParam("code", "The JavaScript to run, as a script: use require(), not import.").req(),
			intParam("timeout", "Seconds before the interpreter is stopped (default 30, max 300).", api.DefaultInterpreterTimeout, 1, pythonMaxTimeout),
		),
		Handler: interpreterHandler("node_interpreter", "the Node.js interpreter", func(sb Sandbox) (interpreterRun, bool) {
			ni, ok := sb.(NodeInterpreter)
			if !ok {
				return nil, false
			}
			return ni.NodeInterpreterExec, true
		}),
	}
}

// interpreterText renders an interpreter's result: what it printed, then
// the error or the last value.
func interpreterText(res *api.InterpreterExecResult) string {
	var parts []string
	if s := strings.TrimRight(res.Stdout, "\n"); s != "" {
		parts = append(parts, s)
	}
	if res.Truncated {
		parts = append(parts, "... (output truncated)")
	}
	switch {
	case res.Error != nil:
		parts = append(parts, "Error:\n"+strings.TrimRight(*res.Error, "\n"))
	case res.Result != nil:
		parts = append(parts, *res.Result)
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return Redact(strings.Join(parts, "\n"))
}

func ptyExecTool() Tool {
	return Tool{
		Name: "pty_exec",
		Description: "Run one command on a terminal (for programs that need a TTY: prompts, pagers, progress bars), typing input_text into it, " +
			"and return what the terminal showed and the exit code. The command is split into words like a shell would but not run by one: " +
			"no pipes, redirections or $variables. The account's command allowlist applies.",
		Schema: object(
			strParam("command", "The program and its arguments, e.g. `python3 setup.py` or `npm init`.").req(),
			strParam("input_text", "Text typed into the terminal, e.g. answers to prompts ending in \\n.").dflt(""),
			numParam("timeout_seconds", "Seconds before the command is killed (default 30, max 120).", api.DefaultPTYTimeout, api.MinPTYTimeout, api.MaxPTYTimeout),
		),
		Handler: runPTYExec,
	}
}

func runPTYExec(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error) {
	in := struct {
		Command string  `json:"command"`
		Input   string  `json:"input_text"`
		Timeout float64 `json:"timeout_seconds"`
	}{Timeout: api.DefaultPTYTimeout}
	if msg := decode("pty_exec", args, &in); msg != "" {
		return msg, nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return "Error: command must not be empty", nil
	}
	if msg := checkSeconds("timeout_seconds", in.Timeout, api.MinPTYTimeout, api.MaxPTYTimeout, api.DefaultPTYTimeout); msg != "" {
		return msg, nil
	}
	pe, ok := sb.(PTYExecer)
	if !ok {
		return unsupported("commands on a terminal"), nil
	}
	res, err := pe.PTYExec(ctx, api.PTYExecRequest{
		Command: in.Command, InputBytes: base64.StdEncoding.EncodeToString([]byte(in.Input)),
		TimeoutSeconds: in.Timeout,
	})
	if text, done, err := result(ctx, err); done {
		return text, err
	}
	out := strings.TrimRight(strings.ReplaceAll(res.Output, "\r\n", "\n"), "\n")
	switch {
	case res.TimedOut:
		return Redact(fmt.Sprintf("Error: timed out after %gs\n%s", in.Timeout, out)), nil
	case res.ExitCode != nil && *res.ExitCode != 0:
		return Redact(fmt.Sprintf("Error (exit code %d):\n%s", *res.ExitCode, out)), nil
	case out == "":
		return "(command completed with no output)", nil
	}
	return Redact(out), nil
}
