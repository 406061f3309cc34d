package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Sandbox is what every tool needs from one sandbox: commands and the file
// routes. Optional capabilities (Presenter, Interpreter, Processes, LanguageServers) are
// separate interfaces a Sandbox may also implement; a tool that needs one
// the sandbox lacks answers with an error text.
//
// Methods return *api.Error for refusals of the API (not found, bad path,
// budget exceeded); tools turn those into text. Any other error is a
// transport failure.
type Sandbox interface {
	Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error)
	WriteFile(ctx context.Context, req api.FileCreateRequest) (*api.FileCreateResult, error)
	View(ctx context.Context, req api.ViewRequest) (*api.ViewResult, error)
	StrReplace(ctx context.Context, req api.StrReplaceRequest) (*api.StrReplaceResult, error)
	List(ctx context.Context, req api.LsRequest) (*api.LsResult, error)
	Glob(ctx context.Context, req api.GlobRequest) (*api.GlobResult, error)
	Grep(ctx context.Context, req api.GrepRequest) (*api.GrepResult, error)
	Watch(ctx context.Context, req api.WatchRequest) (*api.WatchResult, error)
}

// Presenter hands files to the user (present_files).
type Presenter interface {
	PresentFiles(ctx context.Context, req api.PresentFilesRequest) (*api.PresentFilesResult, error)
}

// Interpreter runs code in the sandbox's persistent Python interpreter
// (python_interpreter).
type Interpreter interface {
	InterpreterExec(ctx context.Context, req api.InterpreterExecRequest) (*api.InterpreterExecResult, error)
}

// Processes runs background processes (start_process and its siblings).
type Processes interface {
	StartProcess(ctx context.Context, req api.ProcessStartRequest) (*api.ProcessStarted, error)
	ProcessOutput(ctx context.Context, id string, sinceOffset int64) (*api.ProcessOutput, error)
	SendProcessInput(ctx context.Context, id, data string) (*api.ProcessInputResult, error)
	StopProcess(ctx context.Context, id string) (*api.ProcessStopResult, error)
	ListProcesses(ctx context.Context) (*api.ProcessList, error)
}

// LanguageServers drives language servers in the sandbox (the lsp_* tools).
type LanguageServers interface {
	LSPStart(ctx context.Context, req api.LSPStartRequest) (*api.LSPStarted, error)
	LSPOpen(ctx context.Context, id string, req api.LSPOpenRequest) error
	LSPCompletion(ctx context.Context, id string, req api.LSPCompletionRequest) (*api.LSPCompletionResult, error)
	LSPStop(ctx context.Context, id string) error
}

// Handler runs one tool against a sandbox with the tool's JSON arguments. It
// returns the text for the agent; the error is for transport failures only.
type Handler func(ctx context.Context, sb Sandbox, args json.RawMessage) (string, error)

// Tool is one agent tool.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments object
	Handler     Handler
}

// All returns every tool of this package: Default, Git and LSP.
func All() []Tool {
	return append(append(Default(), Git()...), LSP()...)
}

// Lookup finds the tool called name in ts.
func Lookup(ts []Tool, name string) (Tool, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Call runs the tool called name from ts and always returns text for the
// agent: an unknown tool, arguments that do not fit the schema, a transport
// failure and even a panicking handler come back as an "Error: …" text.
// ts is the set the agent has: a refusal's hint names only tools of it.
func Call(ctx context.Context, ts []Tool, sb Sandbox, name string, args json.RawMessage) string {
	t, ok := Lookup(ts, name)
	if !ok {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		return fmt.Sprintf("Error: unknown tool %q; the tools are %s", name, strings.Join(names, ", "))
	}
	return t.Call(withServed(ctx, ts), sb, args)
}

// Call checks args against t's schema, runs t's handler and always returns
// text, as the package-level Call does. Called alone, t is the set the
// agent has: a refusal's hint names no other tool.
func (t Tool) Call(ctx context.Context, sb Sandbox, args json.RawMessage) (out string) {
	ctx = withServed(ctx, []Tool{t})
	defer func() {
		// A handler bug must not take down the MCP server or the agent loop
		// that called it; the agent sees a text and can carry on.
		if r := recover(); r != nil {
			out = fmt.Sprintf("Error: internal error in %s: %v", t.Name, r)
		}
	}()
	if msg := checkArgs(t.Name, t.Schema, args); msg != "" {
		return msg
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	out, err := t.Handler(ctx, sb, normalizeArgs(t.Schema, args))
	if err != nil {
		return transportText(ctx, err)
	}
	return out
}

// servedKey is the context key of the tools the agent has (withServed).
type servedKey struct{}

// withServed is ctx naming ts as the set of tools the agent calling has,
// unless ctx names one already: the first Call of a call names it, the
// tools it runs inside (MCP's sandbox tools run this package's own) keep it.
func withServed(ctx context.Context, ts []Tool) context.Context {
	if _, ok := ctx.Value(servedKey{}).([]Tool); ok {
		return ctx
	}
	return context.WithValue(ctx, servedKey{}, ts)
}

// serves reports whether the agent calling has the tool called name (of
// the set withServed named; none outside a Call).
func serves(ctx context.Context, name string) bool {
	ts, _ := ctx.Value(servedKey{}).([]Tool)
	_, ok := Lookup(ts, name)
	return ok
}

// transportText is the text for an error a handler could not turn into a result.
func transportText(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "Error: the call was canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "Error: the call timed out before the sandbox answered"
	}
	if e, ok := errors.AsType[*api.Error](err); ok {
		return apiErrorText(ctx, e)
	}
	return withHint(fmt.Sprintf("Error: could not reach the sandbox (%v)", err), err)
}

// hinter is an error that says what to do about it (client.ConnError: the
// control plane did not answer at all).
type hinter interface {
	error
	Hint() string
}

// withHint adds err's hint, if it has one, to text as a Hint: line.
func withHint(text string, err error) string {
	if h, ok := errors.AsType[hinter](err); ok && h.Hint() != "" {
		return text + "\nHint: " + h.Hint()
	}
	return text
}

// apiErrorText renders an API refusal the way the agent should read it:
// "Error [<code>]: <message>", then "Hint: <hint>" on its own line when
// the refusal has one. The code is the refusal's stable code
// (docs/errors.md), which an agent or its harness can match on where the
// message is prose that may change. The hint is the API's as an agent
// reads it (refusalHint): tool calls where it names boxkite CLI commands,
// of the tools the agent has (ctx's, see Call).
func apiErrorText(ctx context.Context, e *api.Error) string {
	return apiErrorTextHint(e, refusalHint(e, func(tool string) bool { return serves(ctx, tool) }))
}

// apiErrorTextHint is apiErrorText with hint in place of the refusal's own.
func apiErrorTextHint(e *api.Error, hint string) string {
	msg := e.Message
	if msg == "" {
		msg = "the sandbox refused the call"
	}
	s := "Error"
	if e.Code != "" {
		s += " [" + e.Code + "]"
	}
	s += ": " + msg
	if hint != "" {
		s += "\nHint: " + hint
	}
	return s
}

// result sorts a sandbox call's error: an *api.Error becomes the text to
// answer with (done is true, err nil; its hint names tools of ctx's set);
// any other error is passed on as a transport failure; no error means
// carry on.
func result(ctx context.Context, err error) (text string, done bool, failure error) {
	if err == nil {
		return "", false, nil
	}
	if e, ok := errors.AsType[*api.Error](err); ok {
		return apiErrorText(ctx, e), true, nil
	}
	return "", true, err
}

// asAPIError finds the API refusal in err.
func asAPIError(err error) (*api.Error, bool) {
	return errors.AsType[*api.Error](err)
}

// isNotFound reports whether err is the API's not_found refusal.
func isNotFound(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Code == api.CodeNotFound
}

// decode unmarshals already-checked args into v. Call has validated them
// against the schema, so a failure here means a handler called directly
// with bad input; it is still reported as text.
func decode(name string, args json.RawMessage, v any) string {
	if len(args) == 0 || string(args) == "null" {
		return ""
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Sprintf("Error: invalid arguments for %s: %v", name, err)
	}
	return ""
}

// unsupported is the text for a tool whose capability the sandbox lacks.
func unsupported(what string) string {
	return "Error: this sandbox does not support " + what
}

// checkSeconds is the text refusing a number of seconds outside [lo, hi]
// for the parameter name, in the REST API's words (and MCP's exec), with
// a hint naming the default; "" when v is in range. The agent tools refuse
// such a value rather than clamp it: a caller asking for 9999 seconds
// learns it gets at most hi instead of being cut off silently.
func checkSeconds(name string, v, lo, hi, dflt float64) string {
	if v >= lo && v <= hi {
		return ""
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return fmt.Sprintf("Error: %s must be between %s and %s seconds, got %s\nHint: omit %s for the default of %s seconds.",
		name, f(lo), f(hi), f(v), name, f(dflt))
}

// clamp limits v to [lo, hi].
func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}
