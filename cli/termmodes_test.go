package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/creack/pty"
)

// screenBuffer is a terminal's output as a test sees it: safe to read
// while attach writes, and it says when a given text has arrived.
type screenBuffer struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
}

func (s *screenBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	if s.seen != nil && strings.Contains(s.b.String(), s.want) {
		close(s.seen)
		s.seen = nil
	}
	return len(p), nil
}

func (s *screenBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttachRestoresTerminalModes: detaching (Ctrl-]) from a program that
// set terminal modes (an agent's TUI: the alternate screen, mouse
// reporting, focus events, bracketed paste, a hidden cursor) resets them
// in this terminal; before, the shell was left on the alternate screen
// with the cursor hidden and mouse moves typed into it. Modes the program
// reset itself are left alone, and output that is not a terminal gets no
// resets.
func TestAttachRestoresTerminalModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames []string
		tty    bool
		want   string // written after the frames
	}{
		{
			"modes left set",
			[]string{"\x1b[?1049h\x1b[?10", "00h\x1b[?1006;1004h\x1b[?2004h\x1b[?25l\x1b[>1u\x1b=ready"},
			true,
			"\x1b[?1049l\x1b[?1000l\x1b[?1006l\x1b[?1004l\x1b[?2004l\x1b[?25h\x1b[<1u\x1b>",
		},
		{"modes reset by the program", []string{"\x1b[?1049h\x1b[?25l\x1b[?1000h", "\x1b[?1000l\x1b[?25h\x1b[?1049lready"}, true, ""},
		{"not a terminal", []string{"\x1b[?1049h\x1b[?25lready"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSandbox{}
			f.serve(t, map[string]http.HandlerFunc{
				"GET /takeover": func(w http.ResponseWriter, r *http.Request) {
					conn, err := websocket.Accept(w, r, nil)
					if err != nil {
						return
					}
					defer conn.CloseNow()
					for _, fr := range tc.frames {
						conn.Write(r.Context(), websocket.MessageBinary, []byte(fr))
					}
					for {
						if _, _, err := conn.Read(r.Context()); err != nil {
							return
						}
					}
				},
			})
			screen := &screenBuffer{want: "ready", seen: make(chan struct{})}
			seen := screen.seen
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() {
				select { // detach once the program has drawn its screen
				case <-seen:
					io.WriteString(pw, "\x1d")
				case <-time.After(30 * time.Second):
					pw.Close()
				}
			}()
			var errOut strings.Builder
			code := Execute(context.Background(), NewRoot(NewApp(IO{In: pr, InTTY: true, Out: screen, OutTTY: tc.tty, ErrOut: &errOut}, "test")), []string{"attach"})
			if code != 0 || !strings.HasSuffix(errOut.String(), "detached\n") {
				t.Fatalf("attach then Ctrl-]: exit %d, stderr %q; want 0 and detached", code, errOut.String())
			}
			if want := strings.Join(tc.frames, "") + tc.want; screen.String() != want {
				t.Errorf("the terminal got %q\nwant %q", screen.String(), want)
			}
		})
	}
}

// TestModeWriterAfterEnd: output that arrives after the attachment ended
// does not reach the terminal (it would set modes again after their
// resets), and end writes the resets once.
func TestModeWriterAfterEnd(t *testing.T) {
	var b strings.Builder
	m := newModeWriter(&b)
	io.WriteString(m, "\x1b[?1003h")
	m.end(true)
	m.end(true)
	io.WriteString(m, "\x1b[?1003h")
	if got, want := b.String(), "\x1b[?1003h\x1b[?1003l"; got != want {
		t.Errorf("the terminal got %q, want %q", got, want)
	}
}

// TestTUIAttachRestoresTerminalModes: the TUI's attach (a) resets the
// modes too when its output is a terminal, before bubbletea takes the
// screen back; it did not know its output was one, and the TUI came back
// with the agent's mouse reporting on, reading mouse moves as keys.
func TestTUIAttachRestoresTerminalModes(t *testing.T) {
	f := &fakeSandbox{}
	f.serve(t, map[string]http.HandlerFunc{
		"GET /takeover": func(w http.ResponseWriter, r *http.Request) {
			conn, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer conn.CloseNow()
			conn.Write(r.Context(), websocket.MessageBinary, []byte("\x1b[?1003h\x1b[?25lready"))
			for {
				if _, _, err := conn.Read(r.Context()); err != nil {
					return
				}
			}
		},
	})
	cfg, c, err := NewApp(IO{}, "test").configClient()
	if err != nil || !cfg.Local {
		t.Fatalf("config: %v", err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	screen := &screenBuffer{want: "ready", seen: make(chan struct{})}
	seen := screen.seen
	go io.Copy(screen, ptmx)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		select {
		case <-seen:
			io.WriteString(pw, "\x1d")
		case <-time.After(30 * time.Second):
			pw.Close()
		}
	}()
	a := &attachCommand{c: c, ctx: context.Background(), id: "sb-1"}
	a.SetStdin(pr)
	a.SetStdout(tty)
	a.SetStderr(io.Discard)
	if err := a.Run(); err != nil {
		t.Fatal(err)
	}
	want := "\x1b[?1003l\x1b[?25h"
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasSuffix(screen.String(), want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the pty hands the bytes on by itself
	}
	if got := screen.String(); !strings.HasSuffix(got, want) {
		t.Errorf("the terminal got %q, want it to end with the resets %q", got, want)
	}
}
