package sidecar

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

//go:embed interpreter_driver.py
var interpreterDriver string

//go:embed interpreter_driver.js
var nodeDriver string

// interpRuntime is a language the persistent interpreter speaks: how its
// driver starts, and where its replies come (stdout, or descriptor 3
// when the driver cannot move its own stdout out of the way).
type interpRuntime struct {
	name    string // for messages: "python3", "node"
	binary  string
	args    func() []string
	replyFD bool
	// interrupt: SIGINT interrupts the running code and leaves the
	// driver ready for the next (Python's driver); without it a request
	// whose client went away kills the driver (Node's).
	interrupt bool
}

var (
	pythonRuntime = interpRuntime{name: "python3", binary: "python3", interrupt: true, args: func() []string {
		return []string{"-u", "-c", interpreterDriver, strconv.Itoa(interpreterOutputCap), strconv.Itoa(interpreterMemory)}
	}}
	// Node's heap is bounded by --max-old-space-size (MiB), as the
	// reference does; its replies go to descriptor 3, so output of child
	// processes, which inherit stdout, cannot garble them.
	nodeRuntime = interpRuntime{name: "node", binary: "node", replyFD: true, args: func() []string {
		return []string{"--max-old-space-size=" + strconv.Itoa(interpreterMemory>>20), "-e", nodeDriver, "--", strconv.Itoa(interpreterOutputCap)}
	}}
)

const (
	interpreterOutputCap = api.MaxInterpreterOutput // stdout and stderr of one request, together, in a JSON answer
	interpreterMemory    = 1 << 30                  // address space of the interpreter, as the reference's ulimit -v
	interpreterStartup   = 15 * time.Second
)

// interpreter is the one persistent python3 process of a sandbox, started
// on first use and stopped when idle, on a timeout, a crash or a reset.
// Requests take turns on run; state has its own lock so status, reset and
// teardown never wait for a running request, and reset kills it.
type interpreter struct {
	h    *Handler
	idle time.Duration
	rt   interpRuntime

	run sync.Mutex // held for the whole of one request

	mu       sync.Mutex
	proc     *pyProc // nil when not running
	busy     bool    // a request is running
	lastUsed time.Time
	reaper   *time.Timer
}

// pyProc is a running driver.
type pyProc struct {
	cmd       *exec.Cmd
	pgid      int
	stdin     io.WriteCloser
	replies   chan []byte // one line per reply; closed when stdout ends
	startedAt time.Time
	killOnce  sync.Once
}

func newInterpreter(h *Handler, idle time.Duration, rt interpRuntime) *interpreter {
	return &interpreter{h: h, idle: idle, rt: rt}
}

// interpreterReply is a line of the driver: a piece of output (FD 1 or
// 2) while the code runs, else the reply (Node's carries its output, in
// Stdout; Python's sent it before).
type interpreterReply struct {
	Ready bool   `json:"ready"`
	FD    int    `json:"fd"`
	Text  string `json:"text"`
	api.InterpreterExecResult
}

// errInterpreter marks failures of the interpreter process itself, which
// the route answers with 502.
var errInterpreter = errors.New("interpreter failed")

// cellOutput receives a request's output as the code writes it; running
// is called once the code has been handed to the interpreter.
type cellOutput interface {
	running()
	output(fd int, text string)
}

// cellRequest is the body of POST /interpreter/exec: /v1's, and Env,
// which only the E2B facade sends (runCode's envs): variables set in the
// Python interpreter's os.environ for this one request, and put back as
// they were after it (a variable the code itself changed is left as the
// code left it). The Node.js driver does not read it.
type cellRequest struct {
	api.InterpreterExecRequest
	Env map[string]string `json:"env,omitempty"`
}

// exec runs code, starting the interpreter if needed. On a timeout or a
// crash the interpreter is killed and its state is lost; when ctx ends
// (the client went away) the code is interrupted (see interrupt) and the
// interpreter kept.
func (in *interpreter) exec(ctx context.Context, req cellRequest, timeout time.Duration, out cellOutput) (api.InterpreterExecResult, error) {
	in.run.Lock()
	defer in.run.Unlock()
	in.mu.Lock()
	p := in.proc
	in.busy = true
	in.mu.Unlock()
	defer in.done()
	if p == nil {
		var err error
		if p, err = in.start(ctx); err != nil {
			return api.InterpreterExecResult{}, err
		}
		in.mu.Lock()
		in.proc = p
		in.mu.Unlock()
	}
	line, err := json.Marshal(struct {
		Code string            `json:"code"`
		Env  map[string]string `json:"env,omitempty"`
	}{req.Code, req.Env})
	if err != nil {
		return api.InterpreterExecResult{}, fmt.Errorf("encode request: %w", err)
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		in.kill(p)
		return api.InterpreterExecResult{}, fmt.Errorf("%w: write request: %v", errInterpreter, err)
	}
	out.running()
	reply, err := in.await(ctx, p, timeout, out)
	if err != nil {
		in.kill(p) // a late reply would answer the next request
		return api.InterpreterExecResult{}, err
	}
	return reply.InterpreterExecResult, nil
}

// await passes p's output to out until its reply. When ctx ends first, a
// driver that can be interrupted is, and await waits on for the reply
// (the output goes nowhere); any other is an error, as is the timeout.
func (in *interpreter) await(ctx context.Context, p *pyProc, timeout time.Duration, out cellOutput) (interpreterReply, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	gone, interrupted := ctx.Done(), false
	var again <-chan time.Time
	for {
		select {
		case line, ok := <-p.replies:
			if !ok {
				return interpreterReply{}, fmt.Errorf("%w: the interpreter exited", errInterpreter)
			}
			var r interpreterReply
			if err := json.Unmarshal(line, &r); err != nil {
				return r, fmt.Errorf("%w: bad reply: %v", errInterpreter, err)
			}
			if r.FD == 0 {
				return r, nil
			}
			if !interrupted {
				out.output(r.FD, r.Text)
			}
		case <-deadline.C:
			return interpreterReply{}, fmt.Errorf("%w: timed out after %s", errInterpreter, timeout)
		case <-gone:
			if !in.rt.interrupt {
				return interpreterReply{}, fmt.Errorf("%w: %v", errInterpreter, context.Cause(ctx))
			}
			gone, interrupted = nil, true
			p.interrupt()
			t := time.NewTicker(interruptAgain)
			defer t.Stop()
			again = t.C
		case <-again:
			// A signal that came before the driver started the code was
			// ignored; the code may also have caught the first.
			p.interrupt()
		}
	}
}

// interruptAgain is how often an interrupted cell that is still running
// is interrupted again, until it ends or its timeout kills it.
const interruptAgain = time.Second

// interrupt sends SIGINT to the driver alone (not its process group): it
// raises KeyboardInterrupt in the running code, as Jupyter's interrupt
// does, and leaves its children to the code.
func (p *pyProc) interrupt() {
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT)
}

// done marks the end of a request and arms the idle reaper.
func (in *interpreter) done() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.busy = false
	in.lastUsed = time.Now()
	if in.reaper == nil {
		in.reaper = time.AfterFunc(in.idle, in.reap)
		return
	}
	in.reaper.Reset(in.idle)
}

// start launches the driver as the sandbox user and waits for its ready line.
func (in *interpreter) start(ctx context.Context) (*pyProc, error) {
	h := in.h
	bin, err := lookPath(h.env, in.rt.binary)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errInterpreter, in.rt.name, err)
	}
	cmd := exec.Command(bin, in.rt.args()...)
	cmd.Dir, cmd.Env = h.workspace, h.env
	if cmd.SysProcAttr, err = h.sysProcAttr(); err != nil {
		return nil, fmt.Errorf("start interpreter: %w", err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start interpreter: %w", err)
	}
	var stdout io.ReadCloser
	if in.rt.replyFD {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start interpreter: %w", err)
		}
		defer w.Close() // the child has its copy
		cmd.ExtraFiles = []*os.File{w}
		stdout = r
	} else if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("start interpreter: %w", err)
	}
	// The driver sends its own stderr through its capture pipe; what
	// reaches this one is the driver failing before that.
	stderr := newRing(4 << 10)
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a child that kept stderr open must not hold up kill
	if err := cmd.Start(); err != nil {
		stdout.Close()
		return nil, fmt.Errorf("%w: start: %v", errInterpreter, err)
	}
	h.oomFirst(cmd.Process.Pid) // an agent's command, as an exec's
	p := &pyProc{cmd: cmd, pgid: cmd.Process.Pid, stdin: stdin, replies: make(chan []byte, 1), startedAt: time.Now().UTC()}
	go func() {
		defer close(p.replies)
		defer stdout.Close()
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			p.replies <- line
		}
	}()
	ready, err := p.read(ctx, interpreterStartup)
	if err == nil && !ready.Ready {
		err = fmt.Errorf("%w: no ready line", errInterpreter)
	}
	if err != nil {
		p.kill()
		if msg := strings.TrimSpace(string(stderr.bytes())); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return p, nil
}

// read waits for one reply.
func (p *pyProc) read(ctx context.Context, timeout time.Duration) (interpreterReply, error) {
	var r interpreterReply
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.replies:
		if !ok {
			return r, fmt.Errorf("%w: the interpreter exited", errInterpreter)
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return r, fmt.Errorf("%w: bad reply: %v", errInterpreter, err)
		}
		return r, nil
	case <-t.C:
		return r, fmt.Errorf("%w: timed out after %s", errInterpreter, timeout)
	case <-ctx.Done():
		return r, fmt.Errorf("%w: %v", errInterpreter, context.Cause(ctx))
	}
}

// kill ends the driver's process group and reaps it, once; later calls
// wait for the first.
func (p *pyProc) kill() {
	p.killOnce.Do(func() {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		p.stdin.Close()
		_ = p.cmd.Wait()
	})
}

// kill ends p and forgets it, if it is still the current driver.
func (in *interpreter) kill(p *pyProc) {
	p.kill()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == p {
		in.proc = nil
	}
}

// stop kills the interpreter, if it runs, failing a request in flight with
// a 502; the next exec starts a fresh one.
func (in *interpreter) stop() {
	in.mu.Lock()
	p := in.proc
	in.proc = nil
	in.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

func (in *interpreter) reap() {
	in.mu.Lock()
	p := in.proc
	idle := !in.busy && time.Since(in.lastUsed) >= in.idle
	if idle {
		in.proc = nil
	}
	in.mu.Unlock()
	if idle && p != nil {
		p.kill()
	}
}

func (in *interpreter) status() api.InterpreterStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == nil {
		return api.InterpreterStatus{}
	}
	started := in.proc.startedAt
	idle := 0.0
	if !in.busy {
		idle = time.Since(in.lastUsed).Round(100 * time.Millisecond).Seconds()
	}
	return api.InterpreterStatus{Running: true, StartedAt: &started, IdleSeconds: &idle}
}

func (h *Handler) interpreterExec(w http.ResponseWriter, r *http.Request) error {
	return h.runInterpreter(w, r, h.sess.interp, false)
}

// nodeExec serves POST /node-interpreter/exec: the same as the Python
// interpreter's, with a persistent Node.js.
func (h *Handler) nodeExec(w http.ResponseWriter, r *http.Request) error {
	return h.runInterpreter(w, r, h.sess.node, true)
}

func (h *Handler) nodeReset(w http.ResponseWriter, _ *http.Request) error {
	h.sess.node.stop()
	return writeJSON(w, http.StatusOK, api.InterpreterReset{Status: "reset"})
}

func (h *Handler) nodeStatus(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, h.sess.node.status())
}

// runInterpreter serves an exec: one JSON answer, or, to a request that
// accepts application/x-ndjson, the output as it comes (interpreter_stream.go).
// With strict, a timeout outside 1..MaxInterpreterTimeout is refused (422),
// as exec's is; without, it is clamped, as the reference clamps Python's.
func (h *Handler) runInterpreter(w http.ResponseWriter, r *http.Request, in *interpreter, strict bool) error {
	var req cellRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Code) == "" {
		return api.Invalid("code", "code must not be empty", "")
	}
	timeout := req.Timeout
	switch {
	case timeout == 0:
		timeout = api.DefaultInterpreterTimeout
	case strict && (timeout < 1 || timeout > api.MaxInterpreterTimeout):
		// node-interpreter, which the reference does not have, refuses
		// as exec and the node_interpreter tool do.
		return api.Invalid("timeout",
			fmt.Sprintf("timeout must be between 1 and %d seconds, got %d", api.MaxInterpreterTimeout, timeout),
			fmt.Sprintf("omit timeout for the default of %d seconds", api.DefaultInterpreterTimeout))
	}
	// Python's is clamped, not refused: the reference clamps it to 1..300
	// (boxkite-reference.md, POST /interpreter/exec); the tools refuse.
	timeout = min(max(timeout, 1), api.MaxInterpreterTimeout)
	if r.Header.Get("Accept") == ndjson {
		return streamInterpreter(w, r, in, req, time.Duration(timeout)*time.Second)
	}
	var out collected
	res, err := in.exec(r.Context(), req, time.Duration(timeout)*time.Second, &out)
	if err != nil {
		return interpreterError(err)
	}
	if out.b.Len() > 0 || out.truncated { // Node's driver sends its output with the reply
		res.Stdout, res.Truncated = out.b.String(), out.truncated
	}
	return writeJSON(w, http.StatusOK, res)
}

// interpreterError is the answer to a failed exec: the interpreter's own
// failures are a 502.
func interpreterError(err error) error {
	if errors.Is(err, errInterpreter) {
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "%v", err).
			WithHint("the interpreter was restarted; its variables are gone")
	}
	return err
}

func (h *Handler) interpreterReset(w http.ResponseWriter, _ *http.Request) error {
	h.sess.interp.stop()
	return writeJSON(w, http.StatusOK, api.InterpreterReset{Status: "reset"})
}

func (h *Handler) interpreterStatus(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, h.sess.interp.status())
}
