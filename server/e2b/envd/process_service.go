package envd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process/processconnect"
	"github.com/boxkite/boxkite/tools"
)

// processService implements process.Process over the sidecar's
// interactive exec (see proc).
type processService struct {
	h *Handler
}

var _ processconnect.ProcessHandler = processService{}

// Start runs a command and streams its events: start with the pid first,
// then output and keepalives, then end. The stream's deadline
// (Connect-Timeout-Ms) is the command's lifetime; the client going away is
// not: the command runs on and can be reattached with Connect.
func (s processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	sess := sessionFrom(ctx)
	msg := req.Msg
	cfg := msg.GetProcess()
	if cfg == nil {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("process is required"))
	}
	cols, rows := 80, 24 // a terminal without a size
	if size := msg.GetPty().GetSize(); size != nil {
		var err error
		if cols, rows, err = ptySize(size); err != nil {
			return err
		}
	}
	env := maps.Clone(sess.Env())
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, cfg.GetEnvs())
	// envd's: the user's home and name, unless the caller set them
	for k, v := range map[string]string{"HOME": UserHome, "USER": UserName, "LOGNAME": UserName} {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	check, login := checkedCommand(cfg, env)
	if err := sess.CheckCommand(ctx, check); err != nil {
		return s.h.rpcError(ctx, err)
	}
	run := cfg
	if login {
		// A login shell reads startup files from HOME, the workspace,
		// which the allowlist never sees: under one, it reads none.
		allowlisted, err := sess.Allowlisted(ctx)
		if err != nil {
			return s.h.rpcError(ctx, err)
		}
		if allowlisted {
			run = withoutProfiles(cfg)
		}
	}
	command, err := shellCommand(run, env)
	if err != nil {
		return err
	}
	ireq := api.InteractiveRequest{Command: command, Cwd: cwdOf(cfg)}
	if pty := msg.GetPty(); pty != nil {
		ireq.TTY, ireq.Term = true, env["TERM"]
		ireq.Cols, ireq.Rows = cols, rows
	}
	if len(ireq.Query().Encode()) > maxQueryCommand {
		if ireq.Command, err = commandFile(ctx, sess, ireq.Command); err != nil {
			return s.h.rpcError(ctx, err)
		}
	}
	relayCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	conn, err := sess.Interactive(relayCtx, ireq)
	if err != nil {
		cancel()
		if cfg.Cwd != nil && *cfg.Cwd != "" {
			err = envdCwdError(askedError(err, absPath(*cfg.Cwd))) // a cwd that is no directory, named as asked
		}
		return s.h.rpcError(ctx, err)
	}
	conn.SetReadLimit(maxFrame)
	p := &proc{
		config: cfg, tag: msg.Tag, tty: ireq.TTY, conn: conn, cancel: cancel,
		subs: map[chan *process.ProcessEvent]struct{}{}, done: make(chan struct{}),
	}
	s.h.procs.add(sess.SandboxID(), p)
	ch, _ := p.subscribe()
	defer p.unsubscribe(ch)
	if !ireq.TTY && !msg.GetStdin() {
		p.noStdin.Store(true)
		_ = p.control(relayCtx, api.InteractiveControl{Type: api.InteractiveEOF}) // no stdin pipe: EOF at once
	}
	var lifetime *time.Timer
	if deadline, ok := ctx.Deadline(); ok {
		lifetime = time.AfterFunc(time.Until(deadline), p.kill)
	}
	go s.h.relay(relayCtx, sess, p, lifetime)

	start := &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: p.pid}}}
	if err := stream.Send(&process.StartResponse{Event: start}); err != nil {
		return err
	}
	return s.h.follow(ctx, req.Header(), ch, func(ev *process.ProcessEvent) error {
		return stream.Send(&process.StartResponse{Event: ev})
	})
}

// maxQueryCommand bounds the command the sidecar's interactive exec is
// given in its query string (URL-encoded, within the sidecar's 64 KiB of
// headers); a longer one is run from a file (commandFile).
const maxQueryCommand = 32 << 10

// commandFile writes command, too long for the sidecar's query string
// (envd runs any its kernel takes: 128 KiB a word, bash -c's argument and
// each variable), to a file in the sandbox's /tmp and returns the short
// command that runs it in the sidecar's shell: the file removes itself,
// then the command runs as it would have.
func commandFile(ctx context.Context, sess Session, command string) (string, error) {
	name := "/tmp/.e2b-command-" + rand.Text()
	resp, err := sidecarOK(ctx, sess, http.MethodPut, "/files/raw", url.Values{"path": {name}},
		strings.NewReader("rm -f "+name+"\n"+command+"\n"), http.Header{"Content-Type": {"application/octet-stream"}})
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return ". " + name, nil
}

// Connect attaches to a running process: start with its pid, then its
// events from now on.
func (s processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], stream *connect.ServerStream[process.ConnectResponse]) error {
	sess := sessionFrom(ctx)
	p, err := s.h.procs.get(sess.SandboxID(), req.Msg.GetProcess())
	if err != nil {
		return err
	}
	ch, ok := p.subscribe()
	if !ok {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d has ended", p.pid))
	}
	defer p.unsubscribe(ch)
	start := &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: p.pid}}}
	if err := stream.Send(&process.ConnectResponse{Event: start}); err != nil {
		return err
	}
	return s.h.follow(ctx, req.Header(), ch, func(ev *process.ProcessEvent) error {
		return stream.Send(&process.ConnectResponse{Event: ev})
	})
}

// List answers the running processes.
func (s processService) List(ctx context.Context, _ *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	out := &process.ListResponse{}
	for _, p := range s.h.procs.list(sessionFrom(ctx).SandboxID()) {
		out.Processes = append(out.Processes, p.info())
	}
	return connect.NewResponse(out), nil
}

// SendInput writes to the process's stdin or its terminal.
func (s processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	p, err := s.h.procs.get(sessionFrom(ctx).SandboxID(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := p.input(ctx, req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

// StreamInput is SendInput as a client stream: a start message names the
// process, data messages follow. (The SDKs' fetch transport cannot send
// client streams; Go and Python clients can.)
func (s processService) StreamInput(ctx context.Context, stream *connect.ClientStream[process.StreamInputRequest]) (*connect.Response[process.StreamInputResponse], error) {
	sess := sessionFrom(ctx)
	var p *proc
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *process.StreamInputRequest_Start:
			var err error
			if p, err = s.h.procs.get(sess.SandboxID(), ev.Start.GetProcess()); err != nil {
				return nil, err
			}
		case *process.StreamInputRequest_Data:
			if p == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the first message must be start"))
			}
			if err := p.input(ctx, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.StreamInputResponse{}), nil
}

// CloseStdin sends end of file to the process's stdin.
func (s processService) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	p, err := s.h.procs.get(sessionFrom(ctx).SandboxID(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if p.tty { // the sidecar would ignore it: a terminal's input is its output too
		return nil, connect.NewError(connect.CodeFailedPrecondition,
			fmt.Errorf("process %d has a terminal, whose stdin cannot be closed: send Ctrl-D (0x04) to it instead", p.pid))
	}
	p.noStdin.Store(true)
	if err := p.control(ctx, api.InteractiveControl{Type: api.InteractiveEOF}); err != nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d has ended", p.pid))
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

// SendSignal ends the process. The sidecar's relay kills the command's
// process group when it goes, so SIGTERM ends it as SIGKILL does.
func (s processService) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	p, err := s.h.procs.get(sessionFrom(ctx).SandboxID(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	switch req.Msg.GetSignal() {
	case process.Signal_SIGNAL_SIGKILL, process.Signal_SIGNAL_SIGTERM:
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("signal %v is not supported", req.Msg.GetSignal()))
	}
	p.kill()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

// Update resizes a process's terminal.
func (s processService) Update(ctx context.Context, req *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	p, err := s.h.procs.get(sessionFrom(ctx).SandboxID(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.GetPty() != nil && !p.tty { // envd's: tty not assigned to process
		return nil, connect.NewError(connect.CodeFailedPrecondition,
			fmt.Errorf("process %d has no terminal to resize: only a pty.create's process has one", p.pid))
	}
	if size := req.Msg.GetPty().GetSize(); size != nil && p.tty {
		cols, rows, err := ptySize(size)
		if err != nil {
			return nil, err
		}
		if err := p.control(ctx, api.InteractiveControl{Type: api.InteractiveResize, Cols: cols, Rows: rows}); err != nil {
			return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d has ended", p.pid))
		}
	}
	return connect.NewResponse(&process.UpdateResponse{}), nil
}

// maxPTYSize is the sidecar's bound on a terminal's columns and rows.
const maxPTYSize = 1000

// ptySize returns a terminal size of pty.create or pty.resize, refused
// (invalid_argument, the SDK's InvalidArgumentError) outside 1 to
// maxPTYSize columns and rows: both refuse 0x0 alike.
func ptySize(size *process.PTY_Size) (cols, rows int, err error) {
	c, r := size.GetCols(), size.GetRows()
	if c < 1 || r < 1 || c > maxPTYSize || r > maxPTYSize {
		return 0, 0, connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("terminal size %dx%d is out of range: give 1 to %d columns and rows", c, r, maxPTYSize))
	}
	return int(c), int(r), nil
}

// maxFrame bounds a frame from the sidecar (it sends at most 32 KiB of
// output per frame).
const maxFrame = 1 << 20

// input sends data to the process's stdin or terminal. Input for the
// other one (commands.sendStdin to a pty's pid, pty.sendInput to a
// command's) is refused failed_precondition, as envd refuses it.
func (p *proc) input(ctx context.Context, in *process.ProcessInput) error {
	var data []byte
	switch v := in.GetInput().(type) {
	case *process.ProcessInput_Stdin:
		if p.tty {
			return connect.NewError(connect.CodeFailedPrecondition,
				fmt.Errorf("process %d has a terminal: write its input to the pty (pty.sendInput), not to stdin", p.pid))
		}
		if p.noStdin.Load() {
			return connect.NewError(connect.CodeFailedPrecondition,
				fmt.Errorf("process %d has no stdin: start it with stdin: true, and send its input before closeStdin", p.pid))
		}
		data = v.Stdin
	case *process.ProcessInput_Pty:
		if !p.tty {
			return connect.NewError(connect.CodeFailedPrecondition,
				fmt.Errorf("process %d has no terminal: write its input to stdin (commands.sendStdin), not to a pty", p.pid))
		}
		data = v.Pty
	}
	if len(data) == 0 {
		return nil
	}
	p.stdinLen.Add(int64(len(data)))
	for len(data) > 0 {
		n := min(len(data), inputChunk)
		if err := p.send(ctx, websocket.MessageBinary, append([]byte{api.StreamStdin}, data[:n]...)); err != nil {
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("process %d has ended", p.pid))
		}
		data = data[n:]
	}
	return nil
}

// inputChunk bounds the input of one frame to the sidecar, which takes
// frames of at most 1 MiB: a sendStdin of 1 MiB or more was sent whole,
// the sidecar closed the connection, and that killed the command.
const inputChunk = 64 << 10

// relay reads the sidecar's frames until the command is done, publishing
// output (scrubbed of secrets unless the account keeps them, and never on
// a terminal, which stays byte-exact as a takeover's does), then audits
// the command and publishes its end event.
func (h *Handler) relay(ctx context.Context, sess Session, p *proc, lifetime *time.Timer) {
	started := time.Now()
	defer p.cancel()
	scrub := sess.ScrubOutput() && !p.tty
	out := newOutputScrubber(scrub, func(stream byte, b []byte) {
		if p.tty {
			stream = ptyStream // a terminal has one stream, which envd calls pty
		}
		p.publish(dataEvent(stream, b))
	})
	frames := make(chan frame)
	go func() {
		defer close(frames)
		for {
			typ, data, err := p.conn.Read(ctx)
			if err != nil {
				return
			}
			frames <- frame{typ, data}
		}
	}()
	var exit *api.InteractiveControl
	idle := time.NewTimer(time.Hour)
	idle.Stop()
loop:
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				break loop
			}
			if f.typ == websocket.MessageText {
				var c api.InteractiveControl
				if json.Unmarshal(f.data, &c) == nil && c.Type == api.InteractiveExit {
					exit = &c
				}
				continue
			}
			if len(f.data) == 0 || int(f.data[0]) >= len(p.outLen) {
				continue
			}
			p.outLen[f.data[0]].Add(int64(len(f.data) - 1))
			if out.write(f.data[0], f.data[1:]) {
				idle.Reset(scrubIdle)
			}
		case <-idle.C:
			out.flush()
		}
	}
	idle.Stop()
	out.flush()
	if lifetime != nil {
		lifetime.Stop()
	}
	_ = p.conn.CloseNow()
	h.procs.remove(sess.SandboxID(), p.pid)

	end := p.endEvent(exit, func() bool { return sess.MemoryKilled(context.WithoutCancel(ctx)) })
	code := int(end.GetExitCode())
	detail := map[string]any{
		"command": allowlistCommand(p.config), "interface": "e2b", "pid": p.pid, "tty": p.tty,
		"stdin_bytes": p.stdinLen.Load(), "stdout_bytes": p.outLen[api.StreamStdout].Load(), "stderr_bytes": p.outLen[api.StreamStderr].Load(),
	}
	if err := sess.Audit(context.WithoutCancel(ctx), AuditEntry{Operation: "exec", Detail: detail, ExitCode: &code, Started: started, Duration: time.Since(started)}); err != nil {
		msg := "the audit log refused the command's entry: " + err.Error()
		end.Error = &msg
	}
	p.finish(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: end}})
}

type frame struct {
	typ  websocket.MessageType
	data []byte
}

// endEvent is how the command ended, in envd's words (Go's
// os.ProcessState): killed by a signal is exit code -1, not exited,
// "signal: killed" (or the signal's name: "signal: segmentation fault").
// Unless it exited 0, the error says so too, as envd's (Go's exec error):
// the SDK makes it the message of CommandExitError. A SIGKILL nobody here
// sent (or a shell's exit 137 after one) that memoryKilled, asked only
// then, pins on the sandbox's memory limit says so in the error, after
// envd's words: the status stays envd's, which scripts may compare.
func (p *proc) endEvent(exit *api.InteractiveControl, memoryKilled func() bool) *process.ProcessEvent_EndEvent {
	p.mu.Lock()
	killed := p.killed
	p.mu.Unlock()
	var end *process.ProcessEvent_EndEvent
	switch {
	case killed || exit == nil || exit.ExitCode == nil:
		status := "signal: killed"
		return &process.ProcessEvent_EndEvent{ExitCode: -1, Exited: false, Status: status, Error: &status}
	case exit.Signal > 0:
		status := "signal: " + syscall.Signal(exit.Signal).String()
		end = &process.ProcessEvent_EndEvent{ExitCode: -1, Exited: false, Status: status, Error: &status}
	case exit.Message != "":
		msg := exit.Message
		return &process.ProcessEvent_EndEvent{ExitCode: int32(*exit.ExitCode), Exited: false, Status: "failed to start", Error: &msg}
	default:
		code := *exit.ExitCode
		end = &process.ProcessEvent_EndEvent{ExitCode: int32(code), Exited: true, Status: "exit status " + strconv.Itoa(code)}
		if code != 0 {
			end.Error = &end.Status
		}
	}
	sigkill := exit.Signal == int(syscall.SIGKILL) || (exit.Signal == 0 && *exit.ExitCode == api.ExitCodeKilled)
	if sigkill && memoryKilled() {
		msg := end.Status + " " + memoryLimitNote
		end.Error = &msg
	}
	return end
}

// memoryLimitNote follows envd's error of a command the kernel's OOM
// killer killed at the sandbox's memory limit (docs/errors.md).
const memoryLimitNote = "(out of memory: killed at the sandbox's memory limit)"

func dataEvent(stream byte, b []byte) *process.ProcessEvent {
	d := &process.ProcessEvent_DataEvent{}
	switch stream {
	case api.StreamStderr:
		d.Output = &process.ProcessEvent_DataEvent_Stderr{Stderr: b}
	case ptyStream:
		d.Output = &process.ProcessEvent_DataEvent_Pty{Pty: b}
	default:
		d.Output = &process.ProcessEvent_DataEvent_Stdout{Stdout: b}
	}
	return &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: d}}
}

// ptyStream marks terminal output for dataEvent; the sidecar sends it as
// stdout.
const ptyStream = 0xff

// follow sends a process's events to one stream until the end event has
// gone or the client leaves, with a keepalive whenever the stream has been
// quiet for the client's Keepalive-Ping-Interval (at most keepAliveMax):
// Node's fetch drops a response that sends nothing for 300 s.
func (h *Handler) follow(ctx context.Context, hdr http.Header, ch chan *process.ProcessEvent, send func(*process.ProcessEvent) error) error {
	every := h.keepAlive(hdr)
	t := time.NewTimer(every)
	defer t.Stop()
	keepalive := &process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if err := send(ev); err != nil {
				return err
			}
			if _, end := ev.GetEvent().(*process.ProcessEvent_End); end {
				return nil
			}
			t.Reset(every)
		case <-t.C:
			if err := send(keepalive); err != nil {
				return err
			}
			t.Reset(every)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// outputScrubber passes a command's output on, scrubbed of secrets by
// tools.StreamRedactor (the scrubber of /v1's exec streams) when on: it
// holds back what could be the start of a secret until the next bytes
// tell, or the stream has been idle for scrubIdle.
type outputScrubber struct {
	on   bool
	emit func(stream byte, b []byte)
	red  map[byte]*tools.StreamRedactor
}

// scrubIdle is how long held-back output waits for more before it goes.
const scrubIdle = 50 * time.Millisecond

func newOutputScrubber(on bool, emit func(byte, []byte)) *outputScrubber {
	return &outputScrubber{on: on, emit: emit, red: map[byte]*tools.StreamRedactor{
		api.StreamStdout: {}, api.StreamStderr: {},
	}}
}

// write passes b on; it reports whether something is held back.
func (o *outputScrubber) write(stream byte, b []byte) bool {
	r := o.red[stream]
	if !o.on || r == nil {
		o.emit(stream, bytes.Clone(b))
		return false
	}
	if out := r.Write(b); len(out) > 0 {
		o.emit(stream, out)
	}
	return r.Held() > 0
}

// flush passes on whatever is held.
func (o *outputScrubber) flush() {
	for _, stream := range []byte{api.StreamStdout, api.StreamStderr} {
		if out := o.red[stream].Flush(); len(out) > 0 {
			o.emit(stream, out)
		}
	}
}
