package sidecar

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// ToolLimits bound the long-lived tools of a sandbox. A zero field takes the
// reference's default, given in its comment.
type ToolLimits struct {
	MaxProcesses       int           // running background processes (4)
	ProcessOutputBytes int           // ring buffer of one process's merged output (256 KiB)
	ProcessTable       int           // processes listed, finished ones evicted oldest first (64)
	ProcessStopGrace   time.Duration // SIGTERM to SIGKILL on stop (5 s)
	KeepAlive          time.Duration // comment lines on an idle process stream (15 s)

	InterpreterIdle time.Duration // idle interpreter is stopped after (900 s)

	MaxLSPServers int           // running language servers (2)
	LSPIdle       time.Duration // idle language server is stopped after (900 s)
	LSPTimeout    time.Duration // one completion request (30 s)

	// The exec budget of the sandbox (reference §2.4): calls of /exec,
	// /interpreter/exec, /process/start, /lsp/start and /lsp/{id}/completion,
	// and the seconds they ran. 0 means the default (500 calls, 3600 s);
	// a negative value disables that half of the budget.
	MaxExecCount   int
	MaxExecSeconds int
}

// withDefaults fills zero fields.
func (l ToolLimits) withDefaults() ToolLimits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxProcesses, 4)
	def(&l.ProcessOutputBytes, api.MaxProcessOutput)
	def(&l.ProcessTable, 64)
	defDur(&l.ProcessStopGrace, 5*time.Second)
	defDur(&l.KeepAlive, 15*time.Second)
	defDur(&l.InterpreterIdle, 900*time.Second)
	def(&l.MaxLSPServers, 2)
	defDur(&l.LSPIdle, 900*time.Second)
	defDur(&l.LSPTimeout, 30*time.Second)
	def(&l.MaxExecCount, 500)
	def(&l.MaxExecSeconds, 3600)
	return l
}

// session is the sandbox's long-lived state beyond single requests:
// background processes, the interpreter, the PTY, language servers, the
// exec budget and the metrics.
type session struct {
	limits  ToolLimits
	procs   *procTable
	interp  *interpreter
	node    *interpreter // the Node.js interpreter (node_interpreter)
	browser *browser     // headless Chromium (the browser tools; browser.go)
	pty     *ptyHub
	lsp     *lspTable
	budget  *budget
	metrics *metrics
}

// newSession builds the state behind processRoutes, which POST /exec's
// budget and every request's metrics use too.
func (h *Handler) newSession() {
	l := h.opts.Tools.withDefaults()
	h.sess = &session{
		limits:  l,
		procs:   newProcTable(l),
		interp:  newInterpreter(h, l.InterpreterIdle, pythonRuntime),
		node:    newInterpreter(h, l.InterpreterIdle, nodeRuntime),
		browser: newBrowser(h),
		pty:     &ptyHub{h: h},
		lsp:     newLSPTable(h, l),
		budget:  newBudget(l.MaxExecCount, l.MaxExecSeconds),
		metrics: newMetrics(time.Now()),
	}
	h.sess.budget.onBreach = h.teardown
}

// processRoutes registers background processes, the interpreter, the PTY,
// LSP and metrics.
func (h *Handler) processRoutes(m *http.ServeMux) {
	h.handle(m, "POST /process/start", h.processStart)
	h.handle(m, "GET /process", h.processList)
	h.handle(m, "POST /process/kill-all", h.processKillAll)
	h.handle(m, "GET /process/{id}/output", h.processOutput)
	h.handle(m, "GET /process/{id}/stream", h.processStream)
	h.handle(m, "POST /process/{id}/input", h.processInput)
	h.handle(m, "POST /process/{id}/stop", h.processStop)

	h.handle(m, "POST /interpreter/exec", h.budgeted(h.interpreterExec))
	h.handle(m, "POST /interpreter/reset", h.interpreterReset)
	h.handle(m, "GET /interpreter/status", h.interpreterStatus)
	h.handle(m, "POST /node-interpreter/exec", h.budgeted(h.nodeExec)) // interpreter.go
	h.handle(m, "POST /node-interpreter/reset", h.nodeReset)
	h.handle(m, "GET /node-interpreter/status", h.nodeStatus)
	h.handle(m, "POST /pty-exec", h.budgeted(h.ptyExec))                 // ptyexec.go
	h.handle(m, "POST /browser/navigate", h.budgeted(h.browserNavigate)) // browser.go
	h.handle(m, "POST /browser/exec", h.budgeted(h.browserExec))
	h.handle(m, "POST /browser/screenshot", h.browserScreenshot)
	h.handle(m, "POST /browser/close", h.browserClose)

	h.handle(m, "GET /pty", h.ptyAttach) // through handle: the token is checked before the upgrade

	h.handle(m, "POST /lsp/start", h.budgeted(h.lspStart))
	h.handle(m, "POST /lsp/{id}/open", h.lspOpen)
	h.handle(m, "POST /lsp/{id}/completion", h.budgeted(h.lspCompletion))
	h.handle(m, "POST /lsp/{id}/stop", h.lspStop)

	h.handle(m, "GET /metrics", h.metricsText)
}

// Close ends everything the handler started and keeps running between
// requests: background processes, the interpreter, the PTY shell and
// language servers. Requests after Close may start them again.
func (h *Handler) Close() error {
	h.teardown()
	h.sess.pty.close()
	return nil
}

// teardown ends the processes, the interpreter and language servers, as a
// breach of the exec budget does; the PTY belongs to a person and stays.
func (h *Handler) teardown() {
	h.sess.procs.killAll()
	h.sess.interp.stop()
	h.sess.node.stop()
	h.sess.browser.stop()
	h.sess.lsp.stopAll()
}

// lookPath finds name in the PATH of env, the environment commands run
// with, rather than the sidecar's own: that is where the command will look.
func lookPath(env []string, name string) (string, error) {
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			return name, nil
		}
		return "", errors.New("not executable")
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one wins, as in the command
		}
	}
	for dir := range strings.SplitSeq(path, ":") {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH " + path)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
