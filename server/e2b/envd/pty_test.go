package envd

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

func TestPTYSize(t *testing.T) {
	for _, tc := range []struct {
		cols, rows uint32
		ok         bool
	}{
		{80, 24, true},
		{1, 1, true},
		{maxPTYSize, maxPTYSize, true},
		{0, 0, false},
		{0, 24, false},
		{80, 0, false},
		{maxPTYSize + 1, 24, false},
		{80, maxPTYSize + 1, false},
		{1 << 31, 1 << 31, false},
	} {
		cols, rows, err := ptySize(&process.PTY_Size{Cols: tc.cols, Rows: tc.rows})
		if tc.ok && (err != nil || cols != int(tc.cols) || rows != int(tc.rows)) {
			t.Errorf("ptySize(%dx%d) = %dx%d, %v, want it", tc.cols, tc.rows, cols, rows, err)
		}
		if !tc.ok && connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("ptySize(%dx%d) = %v, want invalid_argument", tc.cols, tc.rows, err)
		}
	}
}

// ptySession is a Session whose sidecar is never reached: Interactive
// records that it was asked.
type ptySession struct {
	Session
	started []api.InteractiveRequest
}

func (s *ptySession) SandboxID() string                          { return "sb" }
func (s *ptySession) Env() map[string]string                     { return nil }
func (s *ptySession) CheckCommand(context.Context, string) error { return nil }
func (s *ptySession) Allowlisted(context.Context) (bool, error)  { return false, nil }
func (s *ptySession) MemoryKilled(context.Context) bool          { return false }

func (s *ptySession) Interactive(_ context.Context, req api.InteractiveRequest) (*websocket.Conn, error) {
	s.started = append(s.started, req)
	return nil, errors.New("no sidecar here")
}

// TestPTYCreateSizeRefused: pty.create({cols: 0, rows: 0}) was accepted
// (and given 80x24) while pty.resize to 0x0 was refused; both are
// invalid_argument now, before anything starts. A pty without a size
// still gets 80x24.
func TestPTYCreateSizeRefused(t *testing.T) {
	s := processService{h: &Handler{log: slog.New(slog.DiscardHandler)}}
	for _, size := range [][2]uint32{{0, 0}, {0, 24}, {80, 0}, {maxPTYSize + 1, 24}} {
		sess := &ptySession{}
		ctx := context.WithValue(context.Background(), sessionKey{}, Session(sess))
		req := connect.NewRequest(&process.StartRequest{
			Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}},
			Pty:     &process.PTY{Size: &process.PTY_Size{Cols: size[0], Rows: size[1]}},
		})
		err := s.Start(ctx, req, nil)
		if connect.CodeOf(err) != connect.CodeInvalidArgument || len(sess.started) != 0 {
			t.Errorf("pty.create %dx%d: %v, started %d, want invalid_argument and nothing started", size[0], size[1], err, len(sess.started))
		}
	}
	sess := &ptySession{}
	ctx := context.WithValue(context.Background(), sessionKey{}, Session(sess))
	req := connect.NewRequest(&process.StartRequest{
		Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}},
		Pty:     &process.PTY{},
	})
	_ = s.Start(ctx, req, nil)
	if len(sess.started) != 1 || !sess.started[0].TTY || sess.started[0].Cols != 80 || sess.started[0].Rows != 24 {
		t.Errorf("pty.create without a size started %+v, want one 80x24 terminal", sess.started)
	}
}

// TestInputToTheOtherStream: commands.sendStdin to a pty's pid was
// accepted (and its bytes typed on the terminal), and pty.sendInput to a
// command's pid went to its stdin; closeStdin of a pty did nothing. envd
// refuses each failed_precondition, and so does the facade now, before
// anything reaches the sidecar.
func TestInputToTheOtherStream(t *testing.T) {
	h := &Handler{procs: newProcTable(), log: slog.New(slog.DiscardHandler)}
	s := processService{h: h}
	term, cmd := &proc{tty: true, done: make(chan struct{})}, &proc{done: make(chan struct{})}
	h.procs.add("sb", term)
	h.procs.add("sb", cmd)
	ctx := context.WithValue(context.Background(), sessionKey{}, Session(&ptySession{}))
	sel := func(p *proc) *process.ProcessSelector {
		return &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: p.pid}}
	}
	for name, call := range map[string]func() error{
		"sendStdin to a pty": func() error {
			_, err := s.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{
				Process: sel(term),
				Input:   &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("x")}},
			}))
			return err
		},
		"empty sendStdin to a pty": func() error {
			_, err := s.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{
				Process: sel(term),
				Input:   &process.ProcessInput{Input: &process.ProcessInput_Stdin{}},
			}))
			return err
		},
		"pty input to a command": func() error {
			_, err := s.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{
				Process: sel(cmd),
				Input:   &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte("x")}},
			}))
			return err
		},
		"closeStdin of a pty": func() error {
			_, err := s.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: sel(term)}))
			return err
		},
		// pty.resize of a command's pid answered success and did nothing
		"resize of a command": func() error {
			_, err := s.Update(ctx, connect.NewRequest(&process.UpdateRequest{
				Process: sel(cmd),
				Pty:     &process.PTY{Size: &process.PTY_Size{Cols: 10, Rows: 10}},
			}))
			return err
		},
	} {
		if err := call(); connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Errorf("%s: %v, want failed_precondition", name, err)
		}
	}
	if n := term.stdinLen.Load() + cmd.stdinLen.Load(); n != 0 {
		t.Errorf("%d bytes of input counted, want none sent", n)
	}
}
