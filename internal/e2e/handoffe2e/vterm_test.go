package handoffe2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/cli"
)

// vterm is a terminal for the CLI under test: a pty whose slave is the
// CLI's stdin, stdout and stderr, as a person's terminal would be. It
// answers the queries full-screen programs send a terminal (cursor
// position, device attributes, colours, version), which the coding
// agents wait for before they take input, and keeps everything printed.
type vterm struct {
	t           *testing.T
	master, tty *os.File
	mu          sync.Mutex
	raw         []byte
	scanned     int // raw[:scanned] was searched for queries
	mark        int // expect searches the text printed after this (raw offset)
	closed      chan struct{}
	start       time.Time // for the log of how long each step took

	// failOn, when set, ends a wait as soon as the text after the mark
	// matches it, and explain adds what the server logged about it: a
	// failed handoff fails the test at once rather than at the timeout.
	failOn  *regexp.Regexp
	explain func(line string) string
}

// failFast makes the waits fail as soon as re is printed (nil: never),
// with explain's account of the printed line.
func (v *vterm) failFast(re *regexp.Regexp, explain func(line string) string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.failOn, v.explain = re, explain
}

// failed is the error for a line that matches failOn in text, or nil;
// v.mu held.
func (v *vterm) failed(text string) error {
	if v.failOn == nil {
		return nil
	}
	line := v.failOn.FindString(text)
	if line == "" {
		return nil
	}
	return fmt.Errorf("the command failed: %q\n%s", line, v.explain(line))
}

// terminalAnswers are a terminal's replies to the queries coding agents
// send: xterm's, for a 120x40 window with a dark background.
var terminalAnswers = []struct{ query, answer string }{
	{"\x1b[6n", "\x1b[1;1R"},
	{"\x1b[c", "\x1b[?1;2c"},
	{"\x1b[>0q", "\x1bP>|xterm(370)\x1b\\"},
	{"\x1b]10;?", "\x1b]10;rgb:ffff/ffff/ffff\x1b\\"},
	{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
	{"\x1b[?1007$p", "\x1b[?1007;2$y"},
}

func newVterm(t *testing.T) *vterm {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	// The master in non-blocking mode, so closing it ends a read under
	// way (pty.Open hands it over in blocking mode); once it is closed,
	// the CLI's reads of the slave end too.
	fd, err := unix.Dup(int(ptmx.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	ptmx.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	v := &vterm{t: t, master: master, tty: tty, closed: make(chan struct{}), start: time.Now()}
	go v.read()
	t.Cleanup(v.close)
	return v
}

func (v *vterm) read() {
	defer close(v.closed)
	buf := make([]byte, 64<<10)
	for {
		n, err := v.master.Read(buf)
		if n > 0 {
			v.mu.Lock()
			v.raw = append(v.raw, buf[:n]...)
			v.answer()
			v.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// answer replies to the queries printed since the last call (a query
// may straddle two reads); v.mu held.
func (v *vterm) answer() {
	from := max(0, v.scanned-16)
	for _, a := range terminalAnswers {
		q := []byte(a.query)
		for i := from; ; {
			j := bytes.Index(v.raw[i:], q)
			if j < 0 {
				break
			}
			end := i + j + len(q)
			if end > v.scanned {
				_, _ = v.master.Write([]byte(a.answer))
			}
			i = end
		}
	}
	v.scanned = len(v.raw)
}

func (v *vterm) close() {
	v.master.Close()
	<-v.closed
	v.tty.Close()
}

// IO is the CLI's standard streams on this terminal.
func (v *vterm) IO() cli.IO {
	return cli.IO{In: v.tty, Out: v.tty, ErrOut: v.tty, InTTY: true, OutTTY: true, ErrTTY: true}
}

// run runs boxkite with args on this terminal in the background; the
// returned channel gives its exit code.
func (v *vterm) run(args ...string) <-chan int {
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(context.Background(), cli.NewRoot(cli.NewApp(v.IO(), "test")), args)
	}()
	return done
}

func (v *vterm) send(s string) {
	v.t.Helper()
	if _, err := v.master.Write([]byte(s)); err != nil {
		v.t.Fatalf("type %q: %v", s, err)
	}
}

// escapes are the control sequences a screen is drawn with.
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?<>=$ ]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|P[^\x1b]*\x1b\\|[()][0-9A-Za-z]|[=>78]|_[^\x1b]*\x1b\\)`)

// squash is what a screen says with the drawing taken out: escapes
// removed and no white space (full-screen programs often move the cursor
// between words instead of printing a space).
func squash(s string) string {
	s = escapes.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' || r < 0x20 {
			return -1
		}
		return r
	}, s)
}

// All is everything printed, escapes removed.
func (v *vterm) all() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return escapes.ReplaceAllString(string(v.raw), "")
}

// expect waits until one of wants (compared squashed) is printed after
// the last expect's match and returns it; the next expect looks after it.
func (v *vterm) expect(what string, timeout time.Duration, wants ...string) string {
	v.t.Helper()
	got, err := v.await(timeout, wants...)
	if err != nil {
		v.t.Fatalf("waiting for %s (%q): %v\nthe terminal shows (last 3000 bytes, escapes removed):\n%s", what, wants, err, tail(v.all(), 3000))
	}
	v.t.Logf("%s: %q, %s in", what, got, time.Since(v.start).Round(100*time.Millisecond))
	return got
}

func (v *vterm) await(timeout time.Duration, wants ...string) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		v.mu.Lock()
		if err := v.failed(escapes.ReplaceAllString(string(v.raw[v.mark:]), "")); err != nil {
			v.mu.Unlock()
			return "", err
		}
		text := squash(string(v.raw[v.mark:]))
		for _, w := range wants {
			if i := strings.Index(text, squash(w)); i >= 0 {
				// Move the mark to the raw offset after the match: the
				// shortest raw suffix whose squashed text no longer holds it.
				v.mark = v.rawAfter(squash(w))
				v.mu.Unlock()
				return w, nil
			}
		}
		v.mu.Unlock()
		select {
		case <-v.closed:
			return "", errors.New("the terminal closed")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", errors.New("timed out")
		}
	}
}

// rawAfter is the raw offset just past the first place want is printed
// after the mark; v.mu held.
func (v *vterm) rawAfter(want string) int {
	lo, hi := v.mark, len(v.raw)
	for lo < hi {
		mid := (lo + hi) / 2
		if strings.Contains(squash(string(v.raw[v.mark:mid])), want) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// match waits for re in the text printed after the last expect (escapes
// removed, spaces kept) and returns its submatches.
func (v *vterm) match(what string, timeout time.Duration, re *regexp.Regexp) []string {
	v.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		text := escapes.ReplaceAllString(string(v.raw[v.mark:]), "")
		err := v.failed(text)
		v.mu.Unlock()
		if err != nil {
			v.t.Fatalf("waiting for %s (%s): %v\nthe terminal shows:\n%s", what, re, err, tail(v.all(), 3000))
		}
		if m := re.FindStringSubmatch(text); m != nil {
			v.t.Logf("%s: %q, %s in", what, m[0], time.Since(v.start).Round(100*time.Millisecond))
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	v.t.Fatalf("waiting for %s (%s): timed out\nthe terminal shows:\n%s", what, re, tail(v.all(), 3000))
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestVtermFailsFast: a wait ends at the CLI's first error line, with the
// server's account of its request, rather than at its timeout.
func TestVtermFailsFast(t *testing.T) {
	term := newVterm(t)
	log := "level=INFO msg=other request_id=aa\nlevel=ERROR msg=\"driver create failed\" request_id=f00d\n"
	term.failFast(cliError, func(line string) string { return serverAccount(log, line) })
	done := term.run("no-such-command")
	_, err := term.await(time.Minute, "never printed")
	if err == nil || !strings.Contains(err.Error(), "the command failed") {
		t.Fatalf("await = %v, want the CLI's error", err)
	}
	if code := <-done; code == 0 {
		t.Errorf("boxkite no-such-command exited 0")
	}
	got := serverAccount(log, "error: could not create the sandbox [sandbox_operation_failed] (request id f00d)")
	if !strings.Contains(got, `msg="driver create failed"`) || strings.Contains(got, "msg=other") {
		t.Errorf("serverAccount picked the wrong lines:\n%s", got)
	}
}
