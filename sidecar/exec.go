package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// pipeGrace is how long output may keep arriving after the shell exits.
// Background children (`sleep 30 &`) inherit the pipes; without a bound the
// request would hang until they exit.
const pipeGrace = 150 * time.Millisecond

// pipeDrain bounds how long output is still read after the command's group
// was killed; only a process that left the group can hold a pipe that long.
const pipeDrain = time.Second

// readChunk is the most one read of a command's output takes; in a stream it
// is the largest data event.
const readChunk = 32 << 10

// errTimedOut is the cancel cause when an exec outlives its timeout.
var errTimedOut = errors.New("exec timed out")

// execRequest detects an explicit "timeout": 0, which api.ExecRequest's
// plain int cannot tell from an absent field: the outer field shadows it.
type execRequest struct {
	api.ExecRequest
	Timeout *int `json:"timeout"`
}

// execSpec is a validated exec request.
type execSpec struct {
	command     string
	stdin       string
	dir         string
	env         []string
	timeout     time.Duration
	maxOutput   int64 // kept of each stream; the rest is counted and dropped
	stopAtLimit bool  // kill the command when a stream passes maxOutput
	// started, when set, is told the command's process group once it
	// runs (a streamed exec's signals, exec_signal.go).
	started func(pgid int)
}

// outcome is how a command ended.
type outcome struct {
	exitCode int
	timedOut bool
	spawnErr error // the command never started
	duration time.Duration
	output   api.ExecOutputInfo
}

// message is the stderr text an outcome adds to what the command wrote.
func (o outcome) message(spec execSpec) string {
	switch {
	case o.timedOut:
		return fmt.Sprintf("Command timed out after %ds", int(spec.timeout/time.Second))
	case o.spawnErr != nil:
		return o.spawnErr.Error()
	}
	return ""
}

func (h *Handler) exec(w http.ResponseWriter, r *http.Request) error {
	var req execRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	spec, err := h.execSpec(req)
	if err != nil {
		return err
	}
	if wantsNDJSON(r) {
		return h.execStream(w, r, spec)
	}
	var stdout, stderr bytes.Buffer
	// Each buffer is written only by its own stream's reader.
	out := h.run(r.Context(), spec, func(stream string, p []byte) {
		if stream == api.EventStdout {
			stdout.Write(p)
		} else {
			stderr.Write(p)
		}
	})
	res := api.ExecResult{
		ExitCode: out.exitCode, Stdout: stdout.String(), Stderr: stderr.String(),
		DurationMS: out.duration.Milliseconds(), ExecOutputInfo: out.output,
	}
	if msg := out.message(spec); msg != "" {
		// As the reference: a timed-out or unstartable command reports only why.
		res.Stdout, res.Stderr = "", msg
	}
	return writeJSON(w, http.StatusOK, res)
}

func (h *Handler) execSpec(req execRequest) (execSpec, error) {
	spec := execSpec{
		command: req.Command, stdin: req.Stdin, dir: h.workspace, timeout: api.DefaultExecTimeout * time.Second,
		maxOutput: api.DefaultExecOutput,
	}
	if strings.TrimSpace(req.Command) == "" {
		return spec, api.Invalid("command", "command must not be empty", "")
	}
	if strings.IndexByte(req.Command, 0) >= 0 {
		return spec, api.Invalid("command", "command contains a NUL byte", "")
	}
	if req.Timeout != nil {
		t := *req.Timeout
		if t < 1 || t > api.MaxExecTimeout {
			return spec, api.Invalid("timeout", fmt.Sprintf("timeout must be between 1 and %d seconds, got %d", api.MaxExecTimeout, t),
				fmt.Sprintf("omit timeout for the default of %d seconds", api.DefaultExecTimeout))
		}
		spec.timeout = time.Duration(t) * time.Second
	}
	if err := outputLimit(req.ExecRequest, &spec); err != nil {
		return spec, err
	}
	if req.Cwd != "" {
		dir, err := h.workDir(req.Cwd)
		if err != nil {
			return spec, err
		}
		spec.dir = dir
	}
	env, err := commandEnv(h.env, req.Env)
	if err != nil {
		return spec, err
	}
	spec.env = env
	return spec, nil
}

// missingCwdHint is what a caller does about a cwd that is not there:
// every surface (the SDKs, the tools, the E2B API) gets it, not only the CLI.
const missingCwdHint = "make the directory first (mkdir -p DIR in a command of its own), or give one that exists; a relative cwd starts at /workspace"

// workDir is the host directory a command asked to start in cwd runs in.
// A cwd that is not a directory is refused here because a failed chdir in
// the child reads as "fork/exec /bin/sh: no such file or directory",
// blaming the shell.
func (h *Handler) workDir(cwd string) (string, error) {
	dir, err := h.resolve(cwd)
	switch {
	case err != nil:
		return "", err
	case !dir.exists:
		return "", api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd does not exist: %s", cwd).WithHint(missingCwdHint)
	case !dir.dir:
		return "", api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd is not a directory: %s", cwd).
			WithHint("give a directory, not a file; a relative cwd starts at /workspace")
	}
	return dir.host, nil
}

// outputLimit validates max_output_bytes and on_output_limit into spec.
func outputLimit(req api.ExecRequest, spec *execSpec) error {
	switch n := req.MaxOutputBytes; {
	case n < 0 || n > api.MaxExecOutput:
		return api.Invalid("max_output_bytes", fmt.Sprintf("max_output_bytes must be between 1 and %d, got %d", api.MaxExecOutput, n),
			fmt.Sprintf("ask for 1 byte to %d MiB a stream, or omit it for the default of %d MiB", api.MaxExecOutput>>20, api.DefaultExecOutput>>20))
	case n > 0:
		spec.maxOutput = n
	}
	switch req.OnOutputLimit {
	case "", api.OutputLimitTruncate:
	case api.OutputLimitStop:
		spec.stopAtLimit = true
	default:
		return api.Invalid("on_output_limit", fmt.Sprintf("on_output_limit must be %q or %q, got %q", api.OutputLimitTruncate, api.OutputLimitStop, req.OnOutputLimit), "")
	}
	return nil
}

// run starts spec and hands its output to emit, from one goroutine at a
// time, until the command and its output are done. emit must not keep p.
// Output past spec.maxOutput is counted, not emitted, and the command runs
// on, unless spec.stopAtLimit. That, the timeout and ctx's end each kill
// the command's whole process group.
func (h *Handler) run(ctx context.Context, spec execSpec, emit func(stream string, p []byte)) outcome {
	out := h.runCommand(ctx, spec, emit)
	h.sess.metrics.exec(out.exitCode)
	return out
}

// runCommand is run without the exec metric: Warm's command is not an
// exec anyone asked for.
func (h *Handler) runCommand(ctx context.Context, spec execSpec, emit func(stream string, p []byte)) outcome {
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, spec.timeout, errTimedOut)
	defer cancel()

	cmd, p, direct, err := h.start(spec)
	if err != nil {
		h.log.WarnContext(ctx, "exec did not start", slog.Any("err", err))
		return outcome{exitCode: 1, spawnErr: err, duration: time.Since(start)}
	}
	pid := p.pid
	if !p.oomSet {
		h.oomFirst(pid)
	}
	pgid := pid // Setpgid makes the command its group's leader
	if spec.started != nil {
		spec.started(pgid)
	}
	var killed atomic.Bool
	kill := func() { killed.Store(true); _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	var stopped atomic.Bool
	atLimit := func() {}
	if spec.stopAtLimit {
		atLimit = func() { stopped.Store(true); kill() }
	}
	w := h.watchCommand(ctx, running{cmd: cmd, pipes: p, spec: spec, emit: emit, kill: kill, killed: killed.Load, atLimit: atLimit})
	p.stopStdin()
	stdoutN, stderrN := w.stdoutN, w.stderrN
	emitStderr := func(b []byte) { emit(api.EventStderr, b) }
	out := outcome{timedOut: w.timedOut}
	// dash, had it run the command, would have outlived it unless killed
	// with its group, and noted a death by signal on stderr.
	if note := signalNote(w.status); direct && !w.killedBeforeExit && note != "" {
		stderrN = emitCapped(stderrN, spec.maxOutput, []byte(note), emitStderr, atLimit)
	}

	out.exitCode = statusCode(w.status)
	if out.timedOut {
		out.exitCode = api.ExitCodeTimeout
	}
	out.output = api.ExecOutputInfo{
		Truncated:   stdoutN > spec.maxOutput || stderrN > spec.maxOutput,
		StdoutBytes: stdoutN, StderrBytes: stderrN, OutputLimitBytes: spec.maxOutput,
	}
	switch {
	case out.timedOut:
		out.output.StopReason = api.StopReasonTimeout
	case stopped.Load():
		out.output.StopReason = api.StopReasonOutputLimit
	}
	out.duration = time.Since(start)
	return out
}

// running is a started command as run hands it to watchCommand, which
// reads its output and waits for it (execwait*.go).
type running struct {
	cmd     *exec.Cmd
	pipes   *piped
	spec    execSpec
	emit    func(stream string, p []byte)
	kill    func()      // kills the command's group
	killed  func() bool // whether kill ran
	atLimit func()      // called when a stream first goes past spec.maxOutput
}

// waited is what watchCommand learned.
type waited struct {
	status           syscall.WaitStatus
	killedBeforeExit bool // the group was killed before the command exited
	timedOut         bool
	stdoutN, stderrN int64 // output bytes, kept or not
}

// signalNote is what dash writes to stderr when its command dies by a
// signal (sprint_status): glibc's strsignal, " (core dumped)" if so, and
// nothing for SIGINT and SIGPIPE.
func signalNote(ws syscall.WaitStatus) string {
	if !ws.Signaled() || ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGPIPE {
		return ""
	}
	note := strsignal(ws.Signal())
	if ws.CoreDump() {
		note += " (core dumped)"
	}
	return note + "\n"
}

// exitCode is the shell's convention: 128+n for a command killed by signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return statusCode(ws)
	}
	return ps.ExitCode()
}

// exitSignal is the number of the signal that ended the command, or 0
// when it exited.
func exitSignal(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal())
	}
	return 0
}

// statusCode is exitCode of a wait status.
func statusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// emitCapped passes on what of p fits below limit after n bytes, calls
// atLimit when p is the first to go past it, and returns the new count.
func emitCapped(n, limit int64, p []byte, emit func([]byte), atLimit func()) int64 {
	k := int64(len(p))
	if keep := min(k, limit-n); keep > 0 {
		emit(p[:keep])
	}
	if n <= limit && n+k > limit {
		atLimit()
	}
	return n + k
}

// start starts spec's command: directly when dash would only have run one
// program (direct.go), else as /bin/sh -c. direct says which.
func (h *Handler) start(spec execSpec) (cmd *exec.Cmd, p *piped, direct bool, err error) {
	if d, ok := h.direct(spec); ok {
		cmd = &exec.Cmd{Path: d.path, Args: d.argv, Env: d.env, Dir: spec.dir}
		if cmd.SysProcAttr, err = h.sysProcAttr(); err != nil {
			return nil, nil, false, err
		}
		if p, err = startPiped(cmd, spec.stdin, h.devNull(), h.opts.RunAs != nil); err == nil {
			return cmd, p, true, nil
		}
		// The program did not start, and nothing of it ran: dash says why in
		// its words and exit status (127, 126), or runs a script without #!.
	}
	cmd = exec.Command("/bin/sh", "-c", spec.command)
	cmd.Dir, cmd.Env = spec.dir, spec.env
	if cmd.SysProcAttr, err = h.sysProcAttr(); err != nil {
		return nil, nil, false, err
	}
	p, err = startPiped(cmd, spec.stdin, h.devNull(), h.opts.RunAs != nil)
	return cmd, p, false, err
}

// piped holds our ends of a started command's stdin, stdout and stderr,
// and the command's pid.
type piped struct {
	stdin          *os.File // nil when the request had no stdin (the command reads /dev/null)
	stdout, stderr int      // blocking, in no poller: watch reads them when ready
	pid            int
	pidfd          int  // from spawn, ours to close; -1 when os/exec started the command (cmd.Process)
	oomSet         bool // spawn's child set its own OOM score (oomFirst need not)
}

// startPiped starts cmd with fresh pipes. The command gets the pipes' file
// descriptors directly, so cmd.Wait returns when the shell exits even while
// background children still hold them; run decides how long to keep reading.
// Without stdin the command reads devNull when there is one (shared by
// every exec: os/exec would open and close /dev/null for each).
//
// jailed starts the command with spawn (spawn_linux.go) when it can, and
// spawn's child makes itself the OOM killer's first pick (oomFirst). Not
// outside a jail: a child of os/exec gets back the soft RLIMIT_NOFILE
// the runtime raised at start, which only syscall knows; in a jail,
// jail.Lockdown has set both limits since, and that restore fails
// (it would raise the hard limit) unless the server itself started with
// a hard limit at most Lockdown's and a lower soft one. The output pipes'
// command ends become *os.Files only for os/exec: spawn takes descriptors.
func startPiped(cmd *exec.Cmd, stdin string, devNull *os.File, jailed bool) (*piped, error) {
	p := &piped{stdout: -1, stderr: -1, pidfd: -1}
	stdio := [3]int{-1, -1, -1} // the command's: stdin, stdout, stderr
	var stdinTheirs *os.File
	done := func() { // the child has its own copies now, or never will
		closeFDs(stdio[1:])
		if stdinTheirs != nil {
			stdinTheirs.Close()
		}
	}
	fail := func(err error) (*piped, error) {
		done()
		closeFDs([]int{p.stdout, p.stderr})
		if p.stdin != nil {
			p.stdin.Close()
		}
		return nil, err
	}
	for i, out := range []*int{&p.stdout, &p.stderr} {
		o, t, err := outputPipe()
		if err != nil {
			return fail(err)
		}
		*out, stdio[1+i] = o, t
	}
	if stdin != "" {
		o, t, err := commandPipe(false)
		if err != nil {
			return fail(err)
		}
		p.stdin, stdinTheirs, cmd.Stdin = o, t, t
		stdio[0] = int(t.Fd()) // blocking already: Fd changes nothing
	} else if devNull != nil {
		cmd.Stdin = devNull
		stdio[0] = int(devNull.Fd())
	}
	err := errNoSpawn
	if jailed && stdio[0] >= 0 {
		p.pid, p.pidfd, err = spawn(cmd, stdio, true)
		p.oomSet = err == nil
	}
	if err == errNoSpawn {
		err = startOSExec(cmd, &stdio)
		if err == nil {
			p.pid = cmd.Process.Pid
		}
	}
	if err != nil {
		return fail(err)
	}
	done()
	if p.stdin != nil {
		go func() {
			// A command that exits without reading gives EPIPE: not an error.
			_, _ = io.WriteString(p.stdin, stdin)
			p.stdin.Close()
		}()
	}
	return p, nil
}

// startOSExec starts cmd with os/exec, its stdout and stderr stdio's
// descriptors, which it closes (and sets to -1): once wrapped in an
// *os.File, a descriptor is the File's to close.
func startOSExec(cmd *exec.Cmd, stdio *[3]int) error {
	stdout, stderr := os.NewFile(uintptr(stdio[1]), "|theirs"), os.NewFile(uintptr(stdio[2]), "|theirs")
	stdio[1], stdio[2] = -1, -1
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Start()
	stdout.Close()
	stderr.Close()
	return err
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// closeFDs closes each descriptor but -1. Raw: no close of a pipe's end
// or a pidfd can block (issue 27: a syscall.Syscall wakes sysmon).
func closeFDs(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			_, _, _ = syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0)
		}
	}
}

// stopStdin unblocks the stdin writer when the shell exited without reading
// everything; the writer goroutine closes the pipe itself.
func (p *piped) stopStdin() {
	if p.stdin != nil {
		_ = p.stdin.SetWriteDeadline(time.Now())
	}
}
