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
	"sync"
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
		dir, err := h.resolve(req.Cwd)
		if err != nil {
			return spec, err
		}
		// Checked here because a failed chdir in the child reads as
		// "fork/exec /bin/sh: no such file or directory", blaming the shell.
		if !dir.exists {
			return spec, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd does not exist: %s", req.Cwd)
		} else if !dir.dir {
			return spec, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "cwd is not a directory: %s", req.Cwd)
		}
		spec.dir = dir.host
	}
	env, err := commandEnv(h.env, req.Env)
	if err != nil {
		return spec, err
	}
	spec.env = env
	return spec, nil
}

// outputLimit validates max_output_bytes and on_output_limit into spec.
func outputLimit(req api.ExecRequest, spec *execSpec) error {
	switch n := req.MaxOutputBytes; {
	case n < 0 || n > api.MaxExecOutput:
		return api.Invalid("max_output_bytes", fmt.Sprintf("max_output_bytes must be between 1 and %d, got %d", api.MaxExecOutput, n),
			fmt.Sprintf("omit it for the default of %d bytes a stream", api.DefaultExecOutput))
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

// run starts spec and hands its output to emit, from one goroutine per
// stream, until the command and its output are done. emit must not keep p.
// Output past spec.maxOutput is counted, not emitted, and the command runs
// on, unless spec.stopAtLimit. That, the timeout and ctx's end each kill
// the command's whole process group.
func (h *Handler) run(ctx context.Context, spec execSpec, emit func(stream string, p []byte)) outcome {
	start := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, spec.timeout, errTimedOut)
	defer cancel()

	cmd, p, direct, err := h.start(spec)
	if err != nil {
		h.log.WarnContext(ctx, "exec did not start", slog.Any("err", err))
		return outcome{exitCode: 1, spawnErr: err, duration: time.Since(start)}
	}
	h.oomFirst(cmd.Process.Pid)
	pgid := cmd.Process.Pid // Setpgid makes the command its group's leader
	var killed atomic.Bool
	kill := func() { killed.Store(true); _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	var stopped atomic.Bool
	atLimit := func() {}
	if spec.stopAtLimit {
		atLimit = func() { stopped.Store(true); kill() }
	}
	var wg sync.WaitGroup
	var stdoutN, stderrN int64
	emitStderr := func(b []byte) { emit(api.EventStderr, b) }
	wg.Go(func() {
		stdoutN = h.readCapped(p.stdout, spec.maxOutput, func(b []byte) { emit(api.EventStdout, b) }, atLimit)
	})
	wg.Go(func() {
		stderrN = h.readCapped(p.stderr, spec.maxOutput, emitStderr, atLimit)
	})
	readDone := make(chan struct{})
	go func() { wg.Wait(); close(readDone) }()
	waitDone := make(chan struct{})
	go func() { _ = waitCmd(cmd); close(waitDone) }() // a non-zero exit is a result; ProcessState has it

	out := outcome{}
	select {
	case <-waitDone:
	case <-ctx.Done():
		kill()
		<-waitDone
		out.timedOut = context.Cause(ctx) == errTimedOut
	}
	// dash, had it run the command, would have outlived it unless killed
	// with its group, and noted a death by signal on stderr.
	shellNote := direct && !killed.Load()
	p.stopStdin()

	// Background children may still hold the pipes. Give them pipeGrace,
	// then kill the group and keep reading until the pipes drain: output
	// already written must not be lost. Only a child that left the group can
	// keep a pipe open past that; pipeDrain bounds the wait for it.
	grace := time.NewTimer(pipeGrace)
	defer grace.Stop()
	select {
	case <-readDone:
	case <-grace.C:
	case <-ctx.Done():
	}
	select {
	case <-readDone:
	default:
		kill()
		drain := time.NewTimer(pipeDrain)
		defer drain.Stop()
		select {
		case <-readDone:
		case <-drain.C:
			p.stopReading()
		}
	}
	<-readDone
	if note := signalNote(cmd.ProcessState); shellNote && note != "" {
		stderrN = emitCapped(stderrN, spec.maxOutput, []byte(note), emitStderr, atLimit)
	}

	out.exitCode = exitCode(cmd.ProcessState)
	if out.timedOut {
		out.exitCode = api.ExitCodeTimeout
	}
	out.output = api.ExecOutputInfo{
		Truncated:   stdoutN > spec.maxOutput || stderrN > spec.maxOutput,
		StdoutBytes: stdoutN, StderrBytes: stderrN, OutputLimitBytes: spec.maxOutput,
	}
	if stopped.Load() {
		out.output.StopReason = api.StopReasonOutputLimit
	}
	out.duration = time.Since(start)
	h.sess.metrics.exec(out.exitCode)
	return out
}

// signalNote is what dash writes to stderr when its command dies by a
// signal (sprint_status): glibc's strsignal, " (core dumped)" if so, and
// nothing for SIGINT and SIGPIPE.
func signalNote(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGPIPE {
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
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// readCapped reads r to EOF and returns how many bytes it yielded. It
// passes the first limit bytes to emit and only counts the rest, so a
// command that writes more is not blocked on a full pipe; atLimit is
// called once, when the output first goes past limit. Output of exactly
// limit bytes is complete, not cut.
func (h *Handler) readCapped(r io.ReadCloser, limit int64, emit func([]byte), atLimit func()) int64 {
	defer r.Close()
	bp := h.readBufs.Get().(*[]byte)
	defer h.readBufs.Put(bp)
	buf := *bp
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n = emitCapped(n, limit, buf[:k], emit, atLimit)
		}
		if err != nil {
			return n
		}
	}
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
		if p, err = startPiped(cmd, spec.stdin, h.devNull()); err == nil {
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
	p, err = startPiped(cmd, spec.stdin, h.devNull())
	return cmd, p, false, err
}

// piped holds our ends of a started command's stdin, stdout and stderr.
type piped struct {
	stdin          *os.File // nil when the request had no stdin (the command reads /dev/null)
	stdout, stderr *os.File
}

// startPiped starts cmd with fresh pipes. The command gets the pipes' file
// descriptors directly, so cmd.Wait returns when the shell exits even while
// background children still hold them; run decides how long to keep reading.
// Without stdin the command reads devNull when there is one (shared by
// every exec: os/exec would open and close /dev/null for each).
func startPiped(cmd *exec.Cmd, stdin string, devNull *os.File) (*piped, error) {
	var ours, theirs []*os.File
	pipe := func(read bool) (*os.File, *os.File, error) {
		o, t, err := commandPipe(read)
		if err != nil {
			closeAll(ours)
			closeAll(theirs)
			return nil, nil, err
		}
		ours, theirs = append(ours, o), append(theirs, t)
		return o, t, nil
	}
	p := &piped{}
	var err error
	if p.stdout, cmd.Stdout, err = pipe(true); err != nil {
		return nil, err
	}
	if p.stderr, cmd.Stderr, err = pipe(true); err != nil {
		return nil, err
	}
	if stdin != "" {
		if p.stdin, cmd.Stdin, err = pipe(false); err != nil {
			return nil, err
		}
	} else if devNull != nil {
		cmd.Stdin = devNull
	}
	err = cmd.Start()
	closeAll(theirs) // the child has its own copies now, or never will
	if err != nil {
		closeAll(ours)
		return nil, err
	}
	if p.stdin != nil {
		go func() {
			// A command that exits without reading gives EPIPE: not an error.
			_, _ = io.WriteString(p.stdin, stdin)
			p.stdin.Close()
		}()
	}
	return p, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// stopStdin unblocks the stdin writer when the shell exited without reading
// everything; the writer goroutine closes the pipe itself.
func (p *piped) stopStdin() {
	if p.stdin != nil {
		_ = p.stdin.SetWriteDeadline(time.Now())
	}
}

// stopReading makes pending reads return; it is for output pipes held by
// processes that left the command's (already killed) process group.
func (p *piped) stopReading() {
	now := time.Now()
	_ = p.stdout.SetReadDeadline(now)
	_ = p.stderr.SetReadDeadline(now)
}
