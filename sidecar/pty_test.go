package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
)

// term is a test client of the PTY WebSocket that collects what it reads.
type term struct {
	t        testing.TB
	conn     *websocket.Conn
	buf      bytes.Buffer
	controls []string // the text frames read by closed
}

func dialPTY(t testing.TB, url, query string) *term {
	t.Helper()
	conn, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(url, "http")+"/pty"+query,
		&websocket.DialOptions{HTTPHeader: authed})
	if err != nil {
		t.Fatalf("dial /pty%s: %v (response %v)", query, err, resp)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &term{t: t, conn: conn}
}

func (tm *term) send(s string) {
	tm.t.Helper()
	if err := tm.conn.Write(tm.t.Context(), websocket.MessageBinary, []byte(s)); err != nil {
		tm.t.Fatalf("send %q: %v", s, err)
	}
}

func (tm *term) control(s string) {
	tm.t.Helper()
	if err := tm.conn.Write(tm.t.Context(), websocket.MessageText, []byte(s)); err != nil {
		tm.t.Fatalf("send control %s: %v", s, err)
	}
}

// expect reads until the output holds want and returns it all.
func (tm *term) expect(want string) string {
	tm.t.Helper()
	ctx, cancel := context.WithTimeout(tm.t.Context(), 20*time.Second)
	defer cancel()
	for !strings.Contains(tm.buf.String(), want) {
		_, b, err := tm.conn.Read(ctx)
		if err != nil {
			tm.t.Fatalf("waiting for %q: %v; got so far %q", want, err, tm.buf.String())
		}
		tm.buf.Write(b)
	}
	return tm.buf.String()
}

// closed reads until the server closes the connection and returns its status.
func (tm *term) closed() websocket.StatusCode {
	tm.t.Helper()
	ctx, cancel := context.WithTimeout(tm.t.Context(), 20*time.Second)
	defer cancel()
	for {
		typ, b, err := tm.conn.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err)
		}
		if typ == websocket.MessageText {
			tm.controls = append(tm.controls, string(b))
			continue
		}
		tm.buf.Write(b)
	}
}

func TestPTYShared(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	a := dialPTY(t, url, "")
	b := dialPTY(t, url, "")
	watcher := dialPTY(t, url, "?read_only=1")

	// h""i prints hi; the echoed command line does not contain it.
	a.send("echo h\"\"i\n")
	for name, tm := range map[string]*term{"typist": a, "second": b, "watcher": watcher} {
		if out := tm.expect("hi\r\n"); !strings.Contains(out, "echo h") {
			t.Errorf("%s sees %q, want the command too", name, out)
		}
	}

	watcher.send("echo w\"\"atcher-typed\n")
	b.send("echo d\"\"one\n")
	out := a.expect("done\r\n")
	if strings.Contains(out, "watcher-typed") || strings.Contains(out, "w\"\"atcher") {
		t.Errorf("read-only input reached the shell: %q", out)
	}

	b.control(`{"type":"resize","cols":123,"rows":45}`)
	b.control(`{"type":"resize","cols":0,"rows":45}`)        // ignored: out of range
	b.control(`not json`)                                    // ignored
	watcher.control(`{"type":"resize","cols":50,"rows":10}`) // observers may not resize either
	time.Sleep(200 * time.Millisecond)                       // the watcher's frame is on another connection
	b.send("stty size\n")
	b.expect("45 123\r\n")

	late := dialPTY(t, url, "")
	if out := late.expect("done\r\n"); !strings.Contains(out, "hi\r\n") {
		t.Errorf("late joiner's scrollback %q lacks earlier output", out)
	}

	// A client leaving does not end the shell for the others.
	_ = late.conn.Close(websocket.StatusNormalClosure, "bye")
	a.send("echo s\"\"till-here\n")
	b.expect("still-here\r\n")

	// The shell exiting closes every client, after telling its exit
	// status; the next attacher gets a new shell.
	a.send("exit 3\n")
	for name, tm := range map[string]*term{"typist": a, "second": b, "watcher": watcher} {
		if got := tm.closed(); got != websocket.StatusNormalClosure {
			t.Errorf("%s: close status %v after exit, want normal closure", name, got)
		}
		if want := []string{`{"type":"exit","exit_code":3}`}; !slices.Equal(tm.controls, want) {
			t.Errorf("%s: control frames %q after exit 3, want %q", name, tm.controls, want)
		}
	}
	fresh := dialPTY(t, url, "")
	fresh.send("echo n\"\"ew-shell\n")
	if out := fresh.expect("new-shell\r\n"); strings.Contains(out, "still-here") {
		t.Errorf("a fresh shell replayed the old shell's scrollback: %q", out)
	}
}

func TestPTYAuthBeforeUpgrade(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	unconfigured, _ := newServer(t, Options{}) // no token: fails closed
	tests := []struct {
		name       string
		url        string
		header     http.Header
		wantStatus int
	}{
		{"no token", url, nil, http.StatusUnauthorized},
		{"wrong token", url, http.Header{api.HeaderSidecarToken: {"nope"}}, http.StatusUnauthorized},
		{"sidecar without a token", unconfigured.URL, authed, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(tt.url, "http")+"/pty",
				&websocket.DialOptions{HTTPHeader: tt.header})
			if err == nil || resp == nil || resp.StatusCode != tt.wantStatus {
				t.Fatalf("dial = %v, %v; want HTTP %d before the upgrade", resp, err, tt.wantStatus)
			}
		})
	}
}

func TestParsePTYControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    api.PTYControl
		wantErr bool
	}{
		{`{"type":"resize","cols":80,"rows":24}`, api.PTYControl{Type: "resize", Cols: 80, Rows: 24}, false},
		{`{"type":"resize","cols":1,"rows":1000,"extra":true}`, api.PTYControl{Type: "resize", Cols: 1, Rows: 1000}, false},
		{`{"type":"resize","cols":1001,"rows":24}`, api.PTYControl{}, true},
		{`{"type":"resize","cols":80}`, api.PTYControl{}, true},
		{`{"type":"resize","cols":-1,"rows":24}`, api.PTYControl{}, true},
		{`{"type":"resize","cols":1e9,"rows":24}`, api.PTYControl{}, true},
		{`{"type":"input","cols":80,"rows":24}`, api.PTYControl{}, true},
		{`{"type":"resize","cols":"80","rows":24}`, api.PTYControl{}, true},
		{`[]`, api.PTYControl{}, true},
		{``, api.PTYControl{}, true},
	}
	for _, tt := range tests {
		got, err := parsePTYControl([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("parsePTYControl(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
		}
		if err == nil && got != tt.want {
			t.Errorf("parsePTYControl(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func FuzzPTYFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"resize","cols":80,"rows":24}`, `{"type":"resize","cols":1000,"rows":1}`,
		`{"type":"resize","cols":0,"rows":0}`, `{"type":"x"}`, `null`, `{"cols":65536,"rows":65537}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parsePTYControl(b)
		if err != nil {
			return
		}
		// Whatever is accepted must fit a winsize without wrapping.
		if c.Type != api.PTYControlResize || c.Cols < 1 || c.Cols > ptyMaxSize || c.Rows < 1 || c.Rows > ptyMaxSize {
			t.Fatalf("parsePTYControl(%q) accepted %+v", b, c)
		}
	})
}

// TestPTYDetachUntilIdle: a client that detaches once idle gets the
// output of what it typed, including what its commands print after the
// detach (a sleep, a command substitution), and a normal close "detached";
// the shell goes on for another client.
func TestPTYDetachUntilIdle(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	a := dialPTY(t, url, "")
	a.send("echo x; sleep 0.3; echo after-$((6*7))\ny=$(sleep 0.3; echo sub-$((6*7))); echo \"got $y\"\n")
	a.control(`{"type":"detach","until_idle":true}`)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a hang guard only
	defer cancel()
	var err error
	for {
		var b []byte
		if _, b, err = a.conn.Read(ctx); err != nil {
			break
		}
		a.buf.Write(b)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || ce.Reason != "detached" {
		t.Fatalf("detach until idle ended with %v; want a normal close, reason detached; output %q", err, a.buf.String())
	}
	if out := a.buf.String(); !strings.Contains(out, "after-42") || !strings.Contains(out, "got sub-42") {
		t.Errorf("detach until idle: output %q; want every command's output", out)
	}
	b := dialPTY(t, url, "")
	b.send("echo still-$y\n")
	b.expect("still-sub-42")
}

// TestPTYOutputToASlowClient: a client slower to take the shared
// terminal's output than pipeGrace, whose pump is not scheduled for as
// long either, still gets all of it, the tail the shell wrote just before
// it exited included, and then the close for the shell's exit. After the
// shell's end the terminal is closed once background jobs held it for
// pipeGrace (drain): what it holds by then must still be read (session 26
// lost such tails in interactive execs and background processes).
func TestPTYOutputToASlowClient(t *testing.T) {
	t.Parallel()
	// Each read and each frame waits twice the grace: the shell has long
	// exited, its output's tail still in the terminal, when the last
	// reads come.
	url, _ := newToolServer(t, Options{slowOutput: func() { time.Sleep(2 * pipeGrace) }})
	a := dialPTY(t, url, "")
	a.conn.SetReadLimit(1 << 20)
	// More than the terminal holds: the shell waits for the pump to
	// read its output, and exits with the tail still unread.
	const size = 32<<10 + 17
	a.send(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' Q; echo; echo E\"\"ND; exit\n", size))
	if got := a.closed(); got != websocket.StatusNormalClosure {
		t.Errorf("close status %v after exit, want normal closure", got)
	}
	out := a.buf.String()
	if want := strings.Repeat("Q", size) + "\r\nEND\r\n"; !strings.Contains(out, want) {
		t.Errorf("output holds %d Qs and END %v; want %d Qs, then END", strings.Count(out, "Q"), strings.Contains(out, "END"), size)
	}
}
