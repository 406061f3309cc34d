package sidecar

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// inputTimeout bounds one write to a process's stdin: a process that does
// not read must not hold the request forever.
const inputTimeout = 10 * time.Second

// backgroundMarker is in the environment of every background process, so a
// restarted sidecar or an operator can tell them from other processes.
const backgroundMarker = "_BOXKITE_BACKGROUND_PROCESS=1"

// procTable holds the background processes, running and recently finished.
type procTable struct {
	limits ToolLimits
	mu     sync.Mutex
	byID   map[string]*bgProc
	order  []*bgProc // by start, for listing and eviction
}

func newProcTable(l ToolLimits) *procTable {
	return &procTable{limits: l, byID: map[string]*bgProc{}}
}

// bgProc is one background process: a shell in its own process group with
// stdin a pipe and stdout and stderr merged into a ring buffer.
type bgProc struct {
	id, command, description string
	restart                  bool // started again when a filesystem pause resumes
	startedAt                time.Time
	maxRuntime               time.Duration // the watchdog kills it then
	pgid                     int
	out                      *ring
	done                     chan struct{} // closed once status is final and all output is in out

	inMu  sync.Mutex // one input write at a time
	stdin *os.File   // nil once the process ended

	mu       sync.Mutex
	status   string
	exitCode *int
	ending   string // the status to report when we ended it: stopped or killed
	watchdog *time.Timer
}

// state returns the status and, once ended, the exit code.
func (p *bgProc) state() (string, *int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.exitCode
}

func (p *bgProc) info() api.ProcessInfo {
	status, code := p.state()
	return api.ProcessInfo{
		ProcessID: p.id, Command: p.command, Description: p.description, Status: status, StartedAt: p.startedAt, ExitCode: code,
		Restart: p.restart, MaxRuntimeSeconds: int(p.maxRuntime / time.Second),
	}
}

// signal sends sig to the process group while the process runs, recording
// ending as the status it ends with unless an earlier end was recorded.
// It reports whether the process was running.
func (p *bgProc) signal(sig syscall.Signal, ending string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != api.ProcessRunning {
		return false
	}
	if p.ending == "" {
		p.ending = ending
	}
	// While the status says running, the group is ours: wait records the
	// end only after the group's output is done or the group was killed.
	_ = syscall.Kill(-p.pgid, sig)
	return true
}

// stop sends SIGTERM, waits up to grace, then SIGKILL, and waits for the end.
func (p *bgProc) stop(grace time.Duration) {
	if !p.signal(syscall.SIGTERM, api.ProcessStopped) {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.signal(syscall.SIGKILL, api.ProcessStopped)
		<-p.done
	}
}

// kill ends the process group at once and waits for the end.
func (p *bgProc) kill() bool {
	if !p.signal(syscall.SIGKILL, api.ProcessKilled) {
		return false
	}
	<-p.done
	return true
}

// start launches req as a background process, unless too many run.
func (t *procTable) start(h *Handler, req api.ProcessStartRequest) (*bgProc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	running := 0
	for _, p := range t.order {
		if s, _ := p.state(); s == api.ProcessRunning {
			running++
		}
	}
	if running >= t.limits.MaxProcesses {
		return nil, api.Errorf(http.StatusTooManyRequests, api.CodeLimitExceeded,
			"too many background processes: %d are running, the limit is %d", running, t.limits.MaxProcesses).
			WithHint("stop one with POST /process/{id}/stop")
	}
	p, err := h.spawn(req, t.limits.ProcessOutputBytes)
	if err != nil {
		return nil, err
	}
	t.byID[p.id] = p
	t.order = append(t.order, p)
	t.evict()
	return p, nil
}

// evict drops the oldest finished processes past the table's size; t.mu is held.
func (t *procTable) evict() {
	for excess := len(t.order) - t.limits.ProcessTable; excess > 0; excess-- {
		i := slices.IndexFunc(t.order, func(p *bgProc) bool {
			s, _ := p.state()
			return s != api.ProcessRunning
		})
		if i < 0 {
			return
		}
		delete(t.byID, t.order[i].id)
		t.order = slices.Delete(t.order, i, i+1)
	}
}

func (t *procTable) get(id string) (*bgProc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.byID[id]; ok {
		return p, nil
	}
	return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "Process not found").
		WithHint("list the sandbox's background processes and their ids with `boxkite ps`")
}

func (t *procTable) list() []*bgProc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.order)
}

// killAll ends every running process and returns how many there were.
func (t *procTable) killAll() int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, p := range t.list() {
		wg.Go(func() {
			if p.kill() {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// spawn starts the shell with its pipes and the goroutines that feed the
// ring buffer, wait for the end and enforce the maximum runtime.
func (h *Handler) spawn(req api.ProcessStartRequest, outputBytes int) (*bgProc, error) {
	id, err := newProcessID()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", req.Command)
	cmd.Dir = h.workspace
	cmd.Env = append(slices.Clip(h.env), backgroundMarker)
	if cmd.SysProcAttr, err = h.sysProcAttr(); err != nil {
		return nil, fmt.Errorf("start process: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll([]*os.File{inR, inW})
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	// One pipe for both streams keeps their order, as a terminal would.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	err = cmd.Start()
	closeAll([]*os.File{inR, outW}) // the child holds its own copies
	if err != nil {
		closeAll([]*os.File{inW, outR})
		return nil, fmt.Errorf("start process: %w", err)
	}
	h.oomFirst(cmd.Process.Pid)
	p := &bgProc{
		id: id, command: req.Command, description: req.Description, restart: req.Restart,
		startedAt: time.Now().UTC(), maxRuntime: time.Duration(req.MaxRuntimeSeconds) * time.Second, pgid: cmd.Process.Pid,
		out: newRing(outputBytes), done: make(chan struct{}),
		stdin: inW, status: api.ProcessRunning,
	}
	p.watchdog = time.AfterFunc(p.maxRuntime, func() {
		p.signal(syscall.SIGKILL, api.ProcessKilled)
	})
	readDone := make(chan struct{})
	pump := &outputPump{r: outR}
	go func() {
		defer close(readDone)
		pump.run(func(_ byte, b []byte) error {
			if h.opts.slowOutput != nil {
				h.opts.slowOutput()
			}
			_, _ = p.out.Write(b)
			return nil
		}, func() {})
	}()
	go p.wait(cmd, pump, readDone)
	return p, nil
}

// wait records how the process ended once its shell exited and its output
// was read. Children that keep the output pipe open past pipeGrace are killed
// with the group, as /exec does; what the pipe holds by then is still read
// however late its reader is scheduled (a wall-clock deadline lost the
// output's tail on a loaded host), as the interactive exec drains: only a
// pipe that then keeps its reader waiting in Read for pipeDrain, or yields
// more than a pipe holds, is held by a process that left the group.
func (p *bgProc) wait(cmd *exec.Cmd, pump *outputPump, readDone <-chan struct{}) {
	_ = waitCmd(cmd) // a non-zero exit is a result; ProcessState has it
	p.watchdog.Stop()
	drainOutputs(readDone, []*outputPump{pump}, func() { _ = syscall.Kill(-p.pgid, syscall.SIGKILL) })
	<-readDone
	pump.r.Close()

	// SetWriteDeadline unblocks a pending input write, so inMu comes free.
	_ = p.stdin.SetWriteDeadline(time.Now())
	p.inMu.Lock()
	p.stdin.Close()
	p.stdin = nil
	p.inMu.Unlock()

	code := exitCode(cmd.ProcessState)
	p.mu.Lock()
	p.status, p.exitCode = api.ProcessExited, &code
	if p.ending != "" {
		p.status = p.ending
	}
	p.mu.Unlock()
	p.out.close()
	close(p.done)
}

func newProcessID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make process id: %w", err)
	}
	return "proc_" + hex.EncodeToString(b[:]), nil
}

// processStartRequest tells an absent max_runtime_seconds (the default)
// from an explicit 0 (refused): the outer field shadows the embedded one.
type processStartRequest struct {
	api.ProcessStartRequest
	MaxRuntimeSeconds *int `json:"max_runtime_seconds"`
}

func (h *Handler) processStart(w http.ResponseWriter, r *http.Request) error {
	var body processStartRequest
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	req := body.ProcessStartRequest
	req.MaxRuntimeSeconds = api.DefaultProcessRuntime
	if body.MaxRuntimeSeconds != nil {
		req.MaxRuntimeSeconds = *body.MaxRuntimeSeconds
	}
	switch {
	case strings.TrimSpace(req.Command) == "":
		return api.Invalid("command", "command must not be empty", "")
	case strings.IndexByte(req.Command, 0) >= 0:
		return api.Invalid("command", "command contains a NUL byte", "")
	case req.MaxRuntimeSeconds < 1 || req.MaxRuntimeSeconds > api.MaxProcessRuntime:
		return api.Invalid("max_runtime_seconds", fmt.Sprintf("max_runtime_seconds must be between 1 and %d, got %d", api.MaxProcessRuntime, req.MaxRuntimeSeconds),
			fmt.Sprintf("omit it for the default of %d seconds", api.DefaultProcessRuntime))
	}
	if err := h.sess.budget.reserve(); err != nil { // a count only: the process runs past this call
		return err
	}
	p, err := h.sess.procs.start(h, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, api.ProcessStarted{ProcessID: p.id, Status: api.ProcessRunning, StartedAt: p.startedAt})
}

func (h *Handler) processList(w http.ResponseWriter, _ *http.Request) error {
	list := api.ProcessList{Processes: []api.ProcessInfo{}}
	for _, p := range h.sess.procs.list() {
		list.Processes = append(list.Processes, p.info())
	}
	return writeJSON(w, http.StatusOK, list)
}

func (h *Handler) processKillAll(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, api.KillAllResult{Killed: h.sess.procs.killAll()})
}

func (h *Handler) processStop(w http.ResponseWriter, r *http.Request) error {
	p, err := h.sess.procs.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	p.stop(h.sess.limits.ProcessStopGrace)
	status, code := p.state()
	return writeJSON(w, http.StatusOK, api.ProcessStopResult{Status: status, ExitCode: code})
}

func (h *Handler) processInput(w http.ResponseWriter, r *http.Request) error {
	p, err := h.sess.procs.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req api.ProcessInputRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Data) > api.MaxProcessInput {
		return api.Errorf(http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge, "data exceeds %d MiB", api.MaxProcessInput>>20)
	}
	n, err := p.write(req.Data)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.ProcessInputResult{BytesWritten: n})
}

// write sends data to the process's stdin.
func (p *bgProc) write(data string) (int, error) {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if s, _ := p.state(); s != api.ProcessRunning || p.stdin == nil {
		return 0, api.Errorf(http.StatusConflict, api.CodeConflict, "process is not running (status %s)", s)
	}
	_ = p.stdin.SetWriteDeadline(time.Now().Add(inputTimeout))
	n, err := p.stdin.WriteString(data)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		if s, _ := p.state(); s == api.ProcessRunning {
			return n, api.Errorf(http.StatusConflict, api.CodeConflict,
				"process did not read its input within %s: wrote %d of %d bytes", inputTimeout, n, len(data))
		}
	case errors.Is(err, syscall.EPIPE):
		return n, api.Errorf(http.StatusConflict, api.CodeConflict, "process closed its input: wrote %d of %d bytes", n, len(data))
	}
	return n, api.Errorf(http.StatusConflict, api.CodeConflict, "process is not running")
}
