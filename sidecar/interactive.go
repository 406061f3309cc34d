package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/boxkite/boxkite/client/api"
)

// interactiveMaxFrame bounds one frame from the control plane: a chunk of
// stdin (ssh sends at most 32 KiB per packet) or a control message.
const interactiveMaxFrame = 1 << 20

// sftpServerArg is the sidecar subcommand that serves SFTP on its stdin
// and stdout (ServeSFTP); an interactive exec of the sftp subsystem runs
// the sidecar's own binary with it, as the sandbox user.
const sftpServerArg = "sftp-server"

// selfCommand is how the sidecar runs its own binary with args: the
// binary as the kernel knows it, or Options.SelfCommand.
func (h *Handler) selfCommand(args ...string) (string, []string) {
	if h.opts.SelfCommand != nil {
		return h.opts.SelfCommand(args...)
	}
	return "/proc/self/exe", append([]string{"boxkite-sidecar"}, args...)
}

// interactiveCmd builds the command of an interactive exec.
func (h *Handler) interactiveCmd(req api.InteractiveRequest) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	if req.Subsystem == api.SubsystemSFTP {
		path, argv := h.selfCommand(sftpServerArg, h.workspace)
		cmd = &exec.Cmd{Path: path, Args: argv}
	} else {
		cmd = exec.Command("/bin/sh", "-c", req.Command)
	}
	cmd.Dir = h.workspace
	if req.Cwd != "" {
		dir, err := h.workDir(req.Cwd)
		if err != nil {
			return nil, err
		}
		cmd.Dir = dir
	}
	cmd.Env = slices.Clip(h.env)
	if req.TTY {
		cmd.Env = append(cmd.Env, "TERM="+req.Term)
	}
	return cmd, nil
}

// execInteractive serves GET /exec/interactive (WebSocket): see
// api.InteractiveRequest for the protocol.
func (h *Handler) execInteractive(w http.ResponseWriter, r *http.Request) error {
	req, err := api.ParseInteractiveRequest(r.URL.Query())
	if err != nil {
		return err
	}
	cmd, err := h.interactiveCmd(req)
	if err != nil {
		return err
	}
	attr, err := h.sysProcAttr()
	if err != nil {
		return fmt.Errorf("interactive exec: %w", err)
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept answered the failed handshake itself
	}
	defer conn.CloseNow()
	conn.SetReadLimit(interactiveMaxFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	p, err := startInteractive(cmd, attr, req)
	if err != nil {
		h.log.WarnContext(ctx, "interactive exec did not start", slog.Any("err", err))
		one := 1
		_ = writeControl(ctx, conn, api.InteractiveControl{Type: api.InteractiveExit, ExitCode: &one, Message: err.Error()})
		_ = conn.Close(websocket.StatusNormalClosure, "")
		return nil
	}
	h.oomFirst(cmd.Process.Pid)
	p.group.started(cmd.Process.Pid)
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	var writeMu sync.Mutex // frames from the output pumps and the exit frame
	send := func(stream byte, b []byte) error {
		if h.opts.slowOutput != nil {
			h.opts.slowOutput()
		}
		writeMu.Lock()
		defer writeMu.Unlock()
		return conn.Write(ctx, websocket.MessageBinary, append([]byte{stream}, b...))
	}
	var pumps sync.WaitGroup
	outs := make([]*outputPump, 0, len(p.outputs))
	for stream, out := range p.outputs {
		o := &outputPump{r: out, stream: stream}
		outs = append(outs, o)
		pumps.Go(func() { o.run(send, kill) })
	}
	go p.feed(ctx, conn, cancel)

	waitDone := make(chan struct{})
	go func() { _ = waitCmd(cmd); p.group.ended(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-ctx.Done(): // the control plane hung up
		kill()
		<-waitDone
	}
	p.closeInput()
	drained := make(chan struct{})
	go func() { pumps.Wait(); close(drained) }()
	drainOutputs(drained, outs, kill)
	p.closeOutputs()
	exit := api.InteractiveControl{Type: api.InteractiveExit, ExitCode: new(1)}
	if cmd.ProcessState != nil {
		*exit.ExitCode = exitCode(cmd.ProcessState)
		exit.Signal = exitSignal(cmd.ProcessState)
	}
	writeMu.Lock()
	err = writeControl(ctx, conn, exit)
	writeMu.Unlock()
	if err == nil {
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}
	return nil
}

func writeControl(ctx context.Context, conn *websocket.Conn, c api.InteractiveControl) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, b)
}

// outputPump sends one output stream of an interactive exec as frames.
// What it is doing is watched by drainOutputs: waiting in Read (for a
// process to write) or in send (for the client to take a frame).
type outputPump struct {
	r      *os.File
	stream byte
	// inRead is set while the pump waits in Read.
	inRead atomic.Bool
	// read counts the bytes read.
	read atomic.Int64
}

// run sends what o.r yields as frames until it ends. If the control plane
// stops taking output, the command goes and the rest is read and dropped.
// A slow client holds a send, and with it the pipe: flow control, as a
// pipe has.
func (o *outputPump) run(send func(byte, []byte) error, kill func()) {
	buf := make([]byte, readChunk)
	sending := true
	for {
		o.inRead.Store(true)
		n, err := o.r.Read(buf)
		o.inRead.Store(false)
		o.read.Add(int64(n))
		if n > 0 && sending && send(o.stream, buf[:n]) != nil {
			kill()
			sending = false
		}
		if err != nil {
			return
		}
	}
}

// outputDrainMax bounds what one stream (an interactive exec's or a
// background process's) may still yield after the command's group was
// killed: what its pipe held (at most the pipe size an unprivileged
// process may set, 1 MiB) and one chunk more; past it, a process that
// left the group is writing.
const outputDrainMax = 1<<20 + readChunk

// drainOutputs returns when the pumps are done (drained closes), after
// the command exited. Background children holding the pipes get
// pipeGrace, then the group goes; what the pipes hold by then is still
// sent, however long a slow client takes to take it (the exit frame comes
// after the output's last byte). Only a stream that then waits in Read
// for pipeDrain, or yields more than outputDrainMax, is held by a
// process that left the group: it is closed, which ends its pump.
func drainOutputs(drained <-chan struct{}, outs []*outputPump, kill func()) {
	grace := time.NewTimer(pipeGrace)
	defer grace.Stop()
	select {
	case <-drained:
		return
	case <-grace.C:
	}
	kill()
	drainKilled(drained, outs)
}

// drainKilled returns when the pumps are done (drained closes), after the
// command's group was killed: a stream is closed, which ends its pump, only
// once its pump waited in Read for pipeDrain in all, or read more than
// outputDrainMax since, so a pump the scheduler leaves out (a loaded host)
// still reads what its pipe held.
func drainKilled(drained <-chan struct{}, outs []*outputPump) {
	const tick = pipeDrain / 20
	waited := make([]time.Duration, len(outs))
	from := make([]int64, len(outs))
	for i, o := range outs {
		from[i] = o.read.Load()
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-drained:
			return
		case <-t.C:
		}
		for i, o := range outs {
			if o.inRead.Load() {
				waited[i] += tick
			}
			if waited[i] >= pipeDrain || o.read.Load()-from[i] > outputDrainMax {
				_ = o.r.Close()
			}
		}
	}
}

// interactiveProc is a started interactive command's ends.
type interactiveProc struct {
	tty     *os.File          // the PTY's controlling side, when on a PTY
	stdin   *os.File          // what stdin frames are written to
	outputs map[byte]*os.File // by stream
	inOnce  sync.Once
	group   runningExec // the command's process group, for signal frames
}

// startInteractive starts cmd on a PTY or on pipes.
func startInteractive(cmd *exec.Cmd, attr *syscall.SysProcAttr, req api.InteractiveRequest) (*interactiveProc, error) {
	if req.TTY {
		// A session of its own with the PTY as controlling terminal, as
		// sshd does, so job control, ^C and `stty size` work.
		attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
		f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(req.Cols), Rows: uint16(req.Rows)}, attr)
		if err != nil {
			return nil, ptyStartError(err, "start on a pty")
		}
		return &interactiveProc{tty: f, stdin: f, outputs: map[byte]*os.File{api.StreamStdout: f}}, nil
	}
	cmd.SysProcAttr = attr
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	return &interactiveProc{stdin: inW, outputs: map[byte]*os.File{api.StreamStdout: outR, api.StreamStderr: errR}}, nil
}

// feed writes stdin frames to the command and applies control frames
// until the connection ends, then cancels ctx.
func (p *interactiveProc) feed(ctx context.Context, conn *websocket.Conn, cancel context.CancelFunc) {
	defer cancel()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		switch typ {
		case websocket.MessageBinary:
			if len(data) == 0 || data[0] != api.StreamStdin {
				continue
			}
			// A command that stopped reading holds this write, and with
			// it the frames behind it: flow control, as a pipe has.
			if _, err := p.stdin.Write(data[1:]); err != nil {
				p.closeInput()
			}
		case websocket.MessageText:
			var c api.InteractiveControl
			if json.Unmarshal(data, &c) != nil {
				continue
			}
			switch c.Type {
			case api.InteractiveEOF:
				if p.tty == nil {
					p.closeInput()
				}
			case api.InteractiveSignal:
				// An unknown name is dropped, as sshd drops a signal
				// request it does not know.
				if sig, ok := execSignals[c.Name]; ok {
					p.group.signal(sig)
				}
			case api.InteractiveResize:
				if p.tty != nil && c.Cols >= 1 && c.Cols <= ptyMaxSize && c.Rows >= 1 && c.Rows <= ptyMaxSize {
					_ = pty.Setsize(p.tty, &pty.Winsize{Cols: uint16(c.Cols), Rows: uint16(c.Rows)})
				}
			}
		}
	}
}

// closeInput ends the command's stdin (not a PTY's, which is its output too).
func (p *interactiveProc) closeInput() {
	if p.tty != nil {
		return
	}
	p.inOnce.Do(func() { p.stdin.Close() })
}

func (p *interactiveProc) closeOutputs() {
	for _, f := range p.outputs {
		_ = f.Close()
	}
}
