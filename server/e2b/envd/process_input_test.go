package envd

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// TestInputInFrames sends 3 MiB of stdin to a sidecar stand-in that
// reads frames of at most 1 MiB, as the sidecar's interactive exec does
// (interactiveMaxFrame): it gets all of it, in frames it takes. A
// sendStdin of 1 MiB or more went as one frame, which closed the
// connection and killed the command.
func TestInputInFrames(t *testing.T) {
	t.Parallel()
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(1 << 20)
		var stdin []byte
		defer func() { got <- stdin }()
		for {
			_, b, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			if len(b) == 0 || b[0] != api.StreamStdin {
				t.Errorf("frame %q…, want stdin", b[:min(len(b), 8)])
				return
			}
			stdin = append(stdin, b[1:]...)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{pid: 1000, conn: conn}
	want := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	if err := p.input(ctx, &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: want}}); err != nil {
		t.Fatalf("input: %v", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	select {
	case stdin := <-got:
		if !bytes.Equal(stdin, want) {
			t.Errorf("the sidecar got %d bytes of stdin, want all %d", len(stdin), len(want))
		}
	case <-ctx.Done():
		t.Fatal("the sidecar stand-in did not end")
	}
}

// TestStdinClosedRefused: stdin sent to a command started without stdin
// (stdin: false, the SDK's default) or after closeStdin was accepted and
// dropped by the sidecar, whose pipe was closed; envd refuses it
// failed_precondition, and so does the facade now.
func TestStdinClosedRefused(t *testing.T) {
	t.Parallel()
	frames := make(chan []byte, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for {
			_, b, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			frames <- b
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	h := &Handler{procs: newProcTable(), log: slog.New(slog.DiscardHandler)}
	s := processService{h: h}
	open, without := &proc{conn: conn, done: make(chan struct{})}, &proc{done: make(chan struct{})}
	without.noStdin.Store(true) // as Start leaves a command without stdin
	h.procs.add("sb", open)
	h.procs.add("sb", without)
	sctx := context.WithValue(ctx, sessionKey{}, Session(&ptySession{}))
	send := func(p *proc) error {
		_, err := s.SendInput(sctx, connect.NewRequest(&process.SendInputRequest{
			Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: p.pid}},
			Input:   &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("x\n")}},
		}))
		return err
	}
	if err := send(without); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("stdin to a command without stdin: %v, want failed_precondition", err)
	}
	if err := send(open); err != nil {
		t.Fatalf("stdin to a command with stdin: %v", err)
	}
	if _, err := s.CloseStdin(sctx, connect.NewRequest(&process.CloseStdinRequest{
		Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: open.pid}},
	})); err != nil {
		t.Fatalf("closeStdin: %v", err)
	}
	if err := send(open); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("stdin after closeStdin: %v, want failed_precondition", err)
	}
	if got := open.stdinLen.Load(); got != 2 {
		t.Errorf("%d bytes of stdin sent, want the 2 before closeStdin", got)
	}
}
