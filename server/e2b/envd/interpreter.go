package envd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// The code interpreter (@e2b/code-interpreter): POST /execute runs code in
// a context and streams its outcome as newline-delimited JSON; /contexts
// manages contexts. Code runs in the sidecar's persistent Python
// interpreter (/interpreter/exec), so state persists between calls. The
// default context is the interpreter's global namespace, as /v1's
// interpreter uses it; every other context is a namespace of its own in
// the same interpreter.

// cellRequest is the body of the sidecar's /interpreter/exec with the
// environment of the one cell, which the sidecar sets for the cell and
// puts back after it.
type cellRequest struct {
	api.InterpreterExecRequest
	Env map[string]string `json:"env,omitempty"`
}

// executeRequest is the body of POST /execute.
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// codeContext is one context of the code interpreter.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
	chdir    string // the cwd asked for at creation; "" leaves the interpreter's
}

// contextTable holds each sandbox's contexts and execution counts.
type contextTable struct {
	mu     sync.Mutex
	ctxs   map[string]map[string]codeContext // sandbox → id → context
	counts map[string]int                    // sandbox + "/" + context id → executions so far
}

func newContextTable() *contextTable {
	return &contextTable{ctxs: map[string]map[string]codeContext{}, counts: map[string]int{}}
}

// defaultContext is the id of each sandbox's default Python context.
const defaultContext = "default"

func (t *contextTable) get(sandboxID, id string) (codeContext, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == defaultContext {
		return codeContext{ID: defaultContext, Language: "python", Cwd: UserHome}, true
	}
	c, ok := t.ctxs[sandboxID][id]
	return c, ok
}

func (t *contextTable) count(sandboxID, id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[sandboxID+"/"+id]++
	return t.counts[sandboxID+"/"+id]
}

// execute serves POST /execute.
func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionFrom(ctx)
	var req executeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRPCBody)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": "the body is not a JSON execute request"})
		return
	}
	id := req.ContextID
	if id == "" {
		if req.Language != "" && !isPython(req.Language) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": fmt.Sprintf("language %q is not supported: only python runs here", req.Language)})
			return
		}
		id = defaultContext
	}
	cc, ok := h.contexts.get(sess.SandboxID(), id)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "context " + id + " not found"})
		return
	}
	if err := sess.CheckCode(ctx, req.Code); err != nil {
		h.restError(w, r, err)
		return
	}
	// The cell's outcome is held until audited: its bound is reserved
	// before the cell is sent, and given back when the answer ends.
	release, err := sess.ReserveInterpreter()
	if err != nil {
		h.restError(w, r, err)
		return
	}
	defer release()
	// The sandbox's environment (envs at create) is the code's too, as for
	// a command; the request's env_vars overlay it. The sidecar sets them
	// for this cell only (not as a line of the code, which put its
	// traceback's line numbers one off), as E2B's envs are the call's.
	env := maps.Clone(sess.Env())
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, req.EnvVars)
	body, _ := json.Marshal(cellRequest{
		InterpreterExecRequest: api.InterpreterExecRequest{Code: wrapCode(cc, req.Code), Timeout: api.MaxInterpreterTimeout},
		Env:                    env,
	})
	started := time.Now()
	opened := make(chan interpreterAnswer, 1)
	go func() { opened <- openInterpreter(ctx, sess, body) }()
	ans, early := awaitInterpreter(w, opened)
	if ans.err != nil {
		if early {
			h.streamError(w, r, ans.err)
		} else {
			h.restError(w, r, ans.err)
		}
		return
	}
	defer ans.resp.Body.Close()
	if !early {
		// The sidecar took the cell and streams its output: the headers
		// go now, not with the first output line, so the SDK's timeoutMs
		// runs while a silent cell does (it was requestTimeoutMs, 60 s,
		// for any cell that printed nothing before it ended).
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
	}
	out := newLineWriter(w, sess.ScrubOutput())
	res, err := relayInterpreter(ans.resp, out)
	out.flush()
	entry := AuditEntry{
		Operation: "interpreter_exec", Detail: map[string]any{"code": req.Code, "context": id, "interface": "e2b"},
		Started: started, Duration: time.Since(started),
	}
	if err := auditCell(ctx, sess, entry, res, err); err != nil {
		h.streamError(w, r, err)
		return
	}
	if sess.ScrubOutput() {
		res = scrubResult(res)
	}
	for _, line := range executionLines(res, h.contexts.count(sess.SandboxID(), id)) {
		out.line(line)
	}
}

// auditCell records a cell's entry: with its exit code (1 for an error),
// or, when the client went away mid-cell (which interrupted it), as
// interrupted. It returns the cell's error, else the audit's.
func auditCell(ctx context.Context, sess Session, entry AuditEntry, res api.InterpreterExecResult, err error) error {
	if err != nil {
		if ctx.Err() != nil {
			entry.Detail["interrupted"] = true
			_ = sess.Audit(context.WithoutCancel(ctx), entry)
		}
		return err
	}
	exit := 0
	if res.Error != nil {
		exit = 1
	}
	entry.ExitCode = &exit
	return sess.Audit(ctx, entry)
}

// awaitInterpreter waits for the sidecar to take the cell; past
// headerGrace it sends the answer's headers first and reports true.
func awaitInterpreter(w http.ResponseWriter, opened <-chan interpreterAnswer) (interpreterAnswer, bool) {
	select {
	case ans := <-opened:
		return ans, false
	case <-time.After(headerGrace):
		// The SDK's clocks: requestTimeoutMs (60 s) runs until the
		// answer's headers arrive, timeoutMs from then on. Headers held
		// until the cell ran made a cell that waits its turn (or an
		// interpreter slow to start) a TimeoutError and left timeoutMs
		// without effect, so they go now; what fails later comes as an
		// error line. A refusal (rate limit, lost sandbox) comes within
		// the grace, with its status, as before.
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		return <-opened, true
	}
}

// headerGrace is how long /execute holds its answer's headers for the
// sidecar to take the cell: a refusal answers with its status; past it
// the headers go first (see execute).
const headerGrace = 300 * time.Millisecond

// interpreterAnswer is the sidecar's answer to a cell, the code running.
type interpreterAnswer struct {
	resp *http.Response
	err  error
}

// openInterpreter hands a wrapped cell to the sandbox's interpreter,
// asking for its output as it comes. The request ends with ctx (the SDK's
// dropped connection), which interrupts the cell.
func openInterpreter(ctx context.Context, sess Session, body []byte) interpreterAnswer {
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {ndjson}}
	resp, err := sidecarOK(ctx, sess, http.MethodPost, "/interpreter/exec", nil, bytes.NewReader(body), hdr)
	return interpreterAnswer{resp: resp, err: err}
}

// streamError ends an /execute answer whose headers are out with an error
// line, which the SDK reads as execution.error: the status is sent.
func (h *Handler) streamError(w http.ResponseWriter, r *http.Request, err error) {
	value := "internal error"
	if e, ok := errors.AsType[*api.Error](err); ok {
		value = Message(e)
	} else if errors.Is(err, ErrGone) {
		value = "the sandbox is gone"
	} else if r.Context().Err() == nil {
		h.log.ErrorContext(r.Context(), "envd execute failed", "err", err)
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "name": "SandboxError", "value": value, "traceback": value})
	_, _ = w.Write(append(b, '\n'))
}

// executionLines is the outcome in the runCode protocol's lines, after
// the output (relayed as it came): the value of the last expression as
// the main result, the error, and the execution count.
func executionLines(res api.InterpreterExecResult, count int) []map[string]any {
	var lines []map[string]any
	if res.Result != nil {
		lines = append(lines, map[string]any{"type": "result", "text": *res.Result, "is_main_result": true})
	}
	if res.Error != nil {
		name, value := errorNameValue(*res.Error)
		lines = append(lines, map[string]any{"type": "error", "name": name, "value": value, "traceback": *res.Error})
	}
	return append(lines, map[string]any{"type": "number_of_executions", "execution_count": count})
}

// errorNameValue reads the exception's class and message from the last
// line of a Python traceback ("ValueError: bad value").
func errorNameValue(tb string) (name, value string) {
	lines := strings.Split(strings.TrimRight(tb, "\n"), "\n")
	last := lines[len(lines)-1]
	name, value, _ = strings.Cut(last, ": ")
	return strings.TrimSpace(name), value
}

func scrubResult(res api.InterpreterExecResult) api.InterpreterExecResult {
	res.Stdout = tools.Redact(res.Stdout)
	if res.Result != nil {
		v := tools.Redact(*res.Result)
		res.Result = &v
	}
	if res.Error != nil {
		v := tools.Redact(*res.Error)
		res.Error = &v
	}
	return res
}

// isPython reports whether lang names Python, read as E2B's server reads
// a language (template/server/contexts.py normalize_language): trimmed,
// in any case.
func isPython(lang string) bool {
	lang = strings.TrimSpace(lang)
	return strings.EqualFold(lang, "python") || strings.EqualFold(lang, "python3")
}

// wrapCode returns what the interpreter runs for code in context cc: the
// code itself in the default context; in another, a call that runs it in
// that context's namespace and returns the value of its last expression,
// which the interpreter then reports as the result. An empty cell (blank
// or whitespace) runs as `pass`: Jupyter runs one as nothing, so E2B's
// runCode with empty code is an empty execution, while the sidecar refuses empty code
// (400, the SDK's bare "SandboxError: 400 Bad Request").
func wrapCode(cc codeContext, code string) string {
	var b strings.Builder
	if cc.ID == defaultContext {
		if strings.TrimSpace(code) == "" {
			return "pass"
		}
		b.WriteString(code)
		return b.String()
	}
	b.WriteString(contextRunner)
	fmt.Fprintf(&b, "__boxkite_ctx_run(%s, %s, %s)\n", pyString(cc.ID), pyString(cc.chdir), pyString(code))
	return b.String()
}

// contextRunner defines, once per interpreter, the function that runs
// code in a named context's namespace and working directory. Each context
// keeps its own working directory (where its code's os.chdir left it;
// first the cwd it was created with, else the interpreter's, as for a cwd
// that is no directory it can enter: E2B sets a context's cwd with
// IPython's %cd, which prints the error and stays where the kernel
// started, so runCode runs there rather than failing), and the
// interpreter's is put back after each run: a context's cwd was left as
// the working directory of the default context and of every other one.
// It is compiled as <boxkite>: the sidecar leaves its frames, and the
// line calling it, out of a traceback, which starts at the user's code.
var contextRunner = "if '__boxkite_ctx_run' not in globals():\n" +
	"    exec(compile(" + pyString(contextRunnerSource) + ", '<boxkite>', 'exec'), globals())\n"

const contextRunnerSource = `def __boxkite_ctx_run(ctx, cwd, code):
    import ast, os
    spaces = globals().setdefault('__boxkite_contexts', {})
    scope = spaces.setdefault(ctx, {'__name__': '__main__', '__builtins__': __builtins__})
    cwds = globals().setdefault('__boxkite_cwds', {})
    outer = os.getcwd()
    if ctx not in cwds:
        cwds[ctx] = outer
        if cwd:
            try:
                os.chdir(cwd)
                cwds[ctx] = os.getcwd()
            except OSError:
                pass
    os.chdir(cwds[ctx])
    try:
        tree = ast.parse(code, '<input>', 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, '<input>', 'exec'), scope)
        if last is not None:
            return eval(compile(last, '<input>', 'eval'), scope)
    finally:
        cwds[ctx] = os.getcwd()
        os.chdir(outer)
`

// pyString is s as a Python string literal (JSON's escapes are Python's).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// createContext serves POST /contexts.
func (h *Handler) createContext(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	var req struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req)
	if req.Language == "" {
		req.Language = "python"
	}
	if !isPython(req.Language) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": fmt.Sprintf("language %q is not supported: only python runs here", req.Language)})
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	cc := codeContext{ID: hex.EncodeToString(b[:]), Language: "python", Cwd: absPath(req.Cwd)}
	if req.Cwd != "" {
		cc.chdir = inSandbox(cc.Cwd)
	}
	t := h.contexts
	t.mu.Lock()
	if t.ctxs[sess.SandboxID()] == nil {
		t.ctxs[sess.SandboxID()] = map[string]codeContext{}
	}
	n := len(t.ctxs[sess.SandboxID()])
	if n < maxContexts {
		t.ctxs[sess.SandboxID()][cc.ID] = cc
	}
	t.mu.Unlock()
	if n >= maxContexts {
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"code": 429, "message": fmt.Sprintf("a sandbox may have at most %d contexts; remove one first", maxContexts)})
		return
	}
	writeJSON(w, http.StatusOK, cc)
}

// maxContexts bounds the contexts of one sandbox.
const maxContexts = 64

// listContexts serves GET /contexts.
func (h *Handler) listContexts(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	t := h.contexts
	t.mu.Lock()
	list := slices.Collect(maps.Values(t.ctxs[sess.SandboxID()]))
	t.mu.Unlock()
	slices.SortFunc(list, func(a, b codeContext) int { return strings.Compare(a.ID, b.ID) })
	def, _ := t.get(sess.SandboxID(), defaultContext)
	writeJSON(w, http.StatusOK, append([]codeContext{def}, list...))
}

// removeContext serves DELETE /contexts/{id}; its namespace is dropped.
func (h *Handler) removeContext(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := r.PathValue("id")
	t := h.contexts
	t.mu.Lock()
	_, ok := t.ctxs[sess.SandboxID()][id]
	delete(t.ctxs[sess.SandboxID()], id)
	t.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "context " + id + " not found"})
		return
	}
	h.dropNamespace(r, sess, id)
	w.WriteHeader(http.StatusNoContent)
}

// restartContext serves POST /contexts/{id}/restart: the context's
// variables are gone afterwards. Restarting the default context restarts
// the interpreter, and with it every context.
func (h *Handler) restartContext(w http.ResponseWriter, r *http.Request) {
	sess := sessionFrom(r.Context())
	id := r.PathValue("id")
	if _, ok := h.contexts.get(sess.SandboxID(), id); !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "message": "context " + id + " not found"})
		return
	}
	if id != defaultContext {
		h.dropNamespace(r, sess, id)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	resp, err := sidecarOK(r.Context(), sess, http.MethodPost, "/interpreter/reset", nil, nil, nil)
	if err != nil {
		h.restError(w, r, err)
		return
	}
	resp.Body.Close()
	w.WriteHeader(http.StatusNoContent)
}

// dropNamespace forgets a context's variables and working directory in
// the interpreter (dropCode).
func (h *Handler) dropNamespace(r *http.Request, sess Session, id string) {
	body, _ := json.Marshal(api.InterpreterExecRequest{Code: dropCode(id)})
	resp, err := sess.Sidecar(r.Context(), http.MethodPost, "/interpreter/exec", nil, bytes.NewReader(body), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		h.log.WarnContext(r.Context(), "drop interpreter context", "sandbox", sess.SandboxID(), "err", err)
		return
	}
	resp.Body.Close()
}

// dropCode forgets context id's variables and its working directory, so
// a restarted context starts again in its cwd.
func dropCode(id string) string {
	return fmt.Sprintf("globals().get('__boxkite_contexts', {}).pop(%[1]s, None)\n"+
		"globals().get('__boxkite_cwds', {}).pop(%[1]s, None)\nNone", pyString(id))
}
