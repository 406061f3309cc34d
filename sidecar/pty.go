package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"

	"github.com/boxkite/boxkite/client/api"
)

const (
	ptyScrollback  = 64 << 10 // replayed to each client that attaches
	ptyClientQueue = 256      // output chunks a client may lag behind before it is dropped
	ptyMaxFrame    = 1 << 20  // largest frame a client may send (a big paste)
	ptyMaxSize     = 1000     // largest cols or rows a resize may ask for
	// settlePoll is how often a detaching client's shell is looked at
	// until it is idle (settle).
	settlePoll = 20 * time.Millisecond
)

// ptyHub owns the one shared terminal of a sandbox. The shell starts with
// the first attacher and outlives every client; when it exits, its clients
// are closed and the next attacher gets a fresh one.
type ptyHub struct {
	h   *Handler
	mu  sync.Mutex
	cur *ptyShell
}

// ptyShell is a running shell on a pseudo-terminal and the clients watching it.
type ptyShell struct {
	f    *os.File // the PTY's controlling side
	cmd  *exec.Cmd
	done chan struct{} // closed when the shell has exited and its clients are closed

	mu      sync.Mutex
	clients map[*ptyClient]struct{}
	scroll  *ring
	ended   bool
	flushes []chan struct{} // closed once pump passed on what it had read (flush)
	// read counts the bytes pump read (drain).
	read atomic.Int64
	// slow is Options.slowOutput: a pump not scheduled, a client slow to
	// take the output.
	slow func()
}

// ptyClient is one attached WebSocket. Its queue is closed when it leaves,
// is dropped for lagging, or the shell ends.
type ptyClient struct {
	out      chan []byte
	lagged   bool // set under the shell's mu before out is closed
	detached bool // it asked to detach, and had all the output (settle)
}

// attach registers a new client with the current shell, starting one if
// needed, and returns it with the scrollback it should see first. Both are
// taken under one lock, so the client sees every byte exactly once.
func (hub *ptyHub) attach() (*ptyShell, *ptyClient, []byte, error) {
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.cur == nil {
		s, err := hub.start()
		if err != nil {
			return nil, nil, nil, err
		}
		hub.cur = s
	}
	s := hub.cur
	c := &ptyClient{out: make(chan []byte, ptyClientQueue)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c] = struct{}{}
	return s, c, s.scroll.bytes(), nil
}

// start runs an interactive shell as the sandbox user in the workspace; hub.mu is held.
func (hub *ptyHub) start() (*ptyShell, error) {
	h := hub.h
	shell := "/bin/sh"
	if isExecutable("/bin/bash") {
		shell = "/bin/bash"
	}
	cmd := exec.Command(shell, "-i")
	cmd.Dir = h.workspace
	cmd.Env = append(slices.Clip(h.env), "TERM=xterm-256color")
	attr, err := h.sysProcAttr()
	if err != nil {
		return nil, ptyStartError(err, "start shell")
	}
	// A session of its own with the PTY as controlling terminal, so job
	// control and ^C work; setsid makes it a group leader already.
	attr.Setpgid, attr.Setsid, attr.Setctty, attr.Ctty = false, true, true, 0
	f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: 80, Rows: 24}, attr)
	if err != nil {
		return nil, fmt.Errorf("start shell: %w", err)
	}
	if f, err = pollable(f); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = waitCmd(cmd)
		return nil, fmt.Errorf("start shell: %w", err)
	}
	s := &ptyShell{f: f, cmd: cmd, done: make(chan struct{}), clients: map[*ptyClient]struct{}{}, scroll: newRing(ptyScrollback), slow: h.opts.slowOutput}
	readDone := make(chan struct{})
	go s.pump(readDone)
	go func() {
		_ = waitCmd(cmd)
		s.drain(readDone)
		f.Close()
		<-readDone
		s.end()
		hub.mu.Lock()
		if hub.cur == s {
			hub.cur = nil
		}
		hub.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

// ptyDrainMax bounds what the terminal may still yield once its shell
// exited and pipeGrace passed: what it holds (a line discipline's 4 KiB
// and 64 KiB of buffers) and far more; past it, a background job that
// holds the terminal is writing.
const ptyDrainMax = 1 << 20

// drain returns when the terminal may be closed, after the shell exited:
// once the pump is done (readDone closes), or background jobs held the
// terminal open for pipeGrace and what it held by then has been read. A
// pump not scheduled for the grace (a loaded host) would otherwise lose
// the output's tail (TestPTYOutputToASlowClient): it gets until the
// terminal holds nothing unread, or yielded ptyDrainMax more. A slow
// client never holds the pump: broadcast drops it instead.
func (s *ptyShell) drain(readDone <-chan struct{}) {
	grace := time.NewTimer(pipeGrace)
	defer grace.Stop()
	select {
	case <-readDone:
		return
	case <-grace.C:
	}
	from := s.read.Load()
	t := time.NewTicker(pipeDrain / 20)
	defer t.Stop()
	for {
		if n, err := pendingOutput(s.f); err != nil || n == 0 || s.read.Load()-from > ptyDrainMax {
			return
		}
		select {
		case <-readDone:
			return
		case <-t.C:
		}
	}
}

// pump copies the terminal's output to the scrollback and every client.
// A read deadline is a flush's mark (flush): what was read before it has
// been passed on.
func (s *ptyShell) pump(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, readChunk)
	for {
		n, err := s.f.Read(buf)
		s.read.Add(int64(n))
		if n > 0 && s.slow != nil {
			s.slow()
		}
		if n > 0 {
			s.broadcast(slices.Clone(buf[:n]))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.mu.Lock()
			_ = s.f.SetReadDeadline(time.Time{})
			for _, ack := range s.flushes {
				close(ack)
			}
			s.flushes = nil
			s.mu.Unlock()
			continue
		}
		if err != nil {
			return
		}
	}
}

// settle waits until the shell has run everything typed into it (it waits
// for input with none unread, shellIdle) and the output it wrote until then
// is in c's queue, or ctx ends or the shell exits. A client that ends its
// input so (a script) gets its commands' whole output.
func (s *ptyShell) settle(ctx context.Context, c *ptyClient) {
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for {
		if s.hasEnded() {
			return
		}
		// A kernel that cannot tell (no /proc children, no TIOCGPTPEER)
		// gets what was relayed so far, as before.
		idle, err := shellIdle(s.f, s.cmd.Process.Pid)
		if n, perr := pendingOutput(s.f); err != nil || perr != nil || idle && n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	ack := make(chan struct{})
	s.mu.Lock()
	s.flushes = append(s.flushes, ack)
	_ = s.f.SetReadDeadline(time.Now())
	s.mu.Unlock()
	select {
	case <-ack:
	case <-ctx.Done():
		return
	case <-s.done:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.detached = true
	s.removeLocked(c)
}

func (s *ptyShell) broadcast(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.scroll.Write(b)
	for c := range s.clients {
		select {
		case c.out <- b:
		default:
			// One slow client must not stall the terminal for the others.
			c.lagged = true
			s.removeLocked(c)
		}
	}
}

func (s *ptyShell) removeLocked(c *ptyClient) {
	if _, ok := s.clients[c]; ok {
		delete(s.clients, c)
		close(c.out)
	}
}

func (s *ptyShell) detach(c *ptyClient) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(c)
}

// end closes every client's queue: the shell is gone.
func (s *ptyShell) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for c := range s.clients {
		s.removeLocked(c)
	}
}

func (s *ptyShell) hasEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// close ends the current shell, if any, and waits until its clients are closed.
func (hub *ptyHub) close() {
	hub.mu.Lock()
	s := hub.cur
	hub.mu.Unlock()
	if s == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// ptyAttach upgrades to a WebSocket on the shared terminal. Binary frames
// are terminal bytes both ways; a text frame is a PTYControl. With
// ?read_only=1 the client only watches.
func (h *Handler) ptyAttach(w http.ResponseWriter, r *http.Request) error {
	readOnly, _ := strconv.ParseBool(r.URL.Query().Get("read_only"))
	// The token header already authenticated the request, and a browser
	// cannot send it cross-origin, so an Origin check adds nothing; the
	// control plane in front is the only client.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept answered the failed handshake itself
	}
	conn.SetReadLimit(ptyMaxFrame)
	s, c, replay, err := h.sess.pty.attach()
	if err != nil {
		h.log.WarnContext(r.Context(), "pty did not start", slog.Any("err", err))
		_ = conn.Close(websocket.StatusInternalError, "shell did not start")
		return nil
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.feed(ctx, conn, c, replay) })
	if h.relayInput(ctx, conn, s, readOnly) {
		// The client ends its input: answer once the shell ran it.
		go func() {
			for { // notice the client leaving meanwhile
				if _, _, err := conn.Read(ctx); err != nil {
					cancel()
					return
				}
			}
		}()
		s.settle(ctx, c)
		s.detach(c)
		wg.Wait() // feed sends what is left and closes, before ctx ends
	}
	s.detach(c)
	cancel()
	wg.Wait()
	return nil
}

// relayInput types the client's frames into the terminal and applies
// its resizes until it leaves, or until it asks to detach once idle
// (api.PTYControl.UntilIdle), which it reports.
func (h *Handler) relayInput(ctx context.Context, conn *websocket.Conn, s *ptyShell, readOnly bool) (detach bool) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return false
		}
		if typ == websocket.MessageText {
			ctl, err := parsePTYControl(data)
			switch {
			case err != nil:
				h.log.DebugContext(ctx, "pty control frame ignored", slog.Any("err", err))
			case ctl.Type == api.PTYControlDetach:
				return true
			case !readOnly:
				_ = setWinsize(s.f, uint16(ctl.Cols), uint16(ctl.Rows))
			}
			continue
		}
		if readOnly {
			continue
		}
		if _, err := s.f.Write(data); err != nil {
			h.log.DebugContext(ctx, "pty write", slog.Any("err", err))
		}
	}
}

// feed sends the replay and then the client's queue to conn, and closes
// conn with a reason once the queue is closed.
func (s *ptyShell) feed(ctx context.Context, conn *websocket.Conn, c *ptyClient, replay []byte) {
	if len(replay) > 0 {
		if err := conn.Write(ctx, websocket.MessageBinary, replay); err != nil {
			return
		}
	}
	for b := range c.out {
		if s.slow != nil {
			s.slow()
		}
		if err := conn.Write(ctx, websocket.MessageBinary, b); err != nil {
			break
		}
	}
	s.mu.Lock()
	lagged, detached := c.lagged, c.detached
	s.mu.Unlock()
	switch {
	case detached:
		_ = conn.Close(websocket.StatusNormalClosure, "detached")
	case s.hasEnded():
		// How it exited, then the close: the bastion's ssh session
		// exits with the shell's status.
		if ps := s.cmd.ProcessState; ps != nil {
			exit := api.PTYControl{Type: api.PTYControlExit, ExitCode: new(exitCode(ps)), Signal: exitSignal(ps)}
			if b, err := json.Marshal(exit); err == nil {
				_ = conn.Write(ctx, websocket.MessageText, b)
			}
		}
		_ = conn.Close(websocket.StatusNormalClosure, "shell exited")
	case lagged:
		_ = conn.Close(websocket.StatusTryAgainLater, "client too slow; attach again")
	default:
		_ = conn.CloseNow()
	}
}

// parsePTYControl decodes a text frame: a resize with cols and rows in
// 1..ptyMaxSize, or a detach (the control plane passes on only those that
// wait until the shell is idle).
func parsePTYControl(b []byte) (api.PTYControl, error) {
	var c api.PTYControl
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("decode control frame: %w", err)
	}
	if c.Type == api.PTYControlDetach {
		return c, nil
	}
	if c.Type != api.PTYControlResize {
		return c, fmt.Errorf("unknown control frame type %q", c.Type)
	}
	if c.Cols < 1 || c.Cols > ptyMaxSize || c.Rows < 1 || c.Rows > ptyMaxSize {
		return c, errors.New("resize needs cols and rows between 1 and 1000")
	}
	return c, nil
}
