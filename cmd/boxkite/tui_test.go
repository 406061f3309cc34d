package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// tuiDeadline bounds every wait for the TUI's screen. It is a deadline
// for a poll, not a timing assertion: under -race on a busy machine a
// first draw can take seconds.
const tuiDeadline = 30 * time.Second

// tuiPane is a boxkite tui running in a detached 80×24 tmux session.
type tuiPane struct {
	socket string // tmux -S path; a fresh server per pane
	exit   string // where the wrapper writes the TUI's exit code
}

func (p *tuiPane) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (p *tuiPane) capture(ts *testscript.TestScript, escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", "tui"}
	if escapes {
		args = append(args, "-e")
	}
	out, err := p.tmux(args...)
	if err != nil {
		ts.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return out
}

// cmdTUI drives boxkite tui in tmux, like a person at a terminal:
//
//	tui start          start it (in a pane that outlives it)
//	tui wait REGEXP    poll the screen until REGEXP matches
//	tui keys KEY...    press keys, one at a time (tmux key names)
//	tui resize W H     resize the window
//	[!] tui nocolor    the screen has no colour (! it has some)
//	tui exited N       it exited with N and gave the terminal back
func cmdTUI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 || (neg && args[0] != "nocolor") {
		ts.Fatalf("usage: tui start|wait|keys|resize|[!] nocolor|exited ...")
	}
	// The pane is found through the script's environment: TUI_SOCKET is
	// set by tui start.
	p := &tuiPane{socket: ts.Getenv("TUI_SOCKET"), exit: ts.MkAbs("tui.exit")}
	if args[0] != "start" && p.socket == "" {
		ts.Fatalf("tui %s: no tui started", args[0])
	}
	switch args[0] {
	case "start":
		tuiStart(ts)
	case "wait":
		if len(args) != 2 {
			ts.Fatalf("usage: tui wait REGEXP")
		}
		tuiWait(ts, p, args[1])
	case "keys":
		for _, k := range args[1:] {
			// One key per send-keys: keys sent together arrive as one
			// read, which a program may take for pasted text.
			if out, err := p.tmux("send-keys", "-t", "tui", k); err != nil {
				ts.Fatalf("tmux send-keys %s: %v\n%s", k, err, out)
			}
		}
	case "resize":
		if len(args) != 3 {
			ts.Fatalf("usage: tui resize COLS ROWS")
		}
		if out, err := p.tmux("resize-window", "-t", "tui", "-x", args[1], "-y", args[2]); err != nil {
			ts.Fatalf("tmux resize-window: %v\n%s", err, out)
		}
	case "nocolor":
		// A foreground or background colour: 3x, 4x, 9x or 10x, or an
		// extended one (38;5;n, 48;2;r;g;b).
		screen := p.capture(ts, true)
		m := regexp.MustCompile(`\x1b\[(?:[0-9]+;)*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9]+)*m`).FindString(screen)
		switch {
		case m != "" && !neg:
			ts.Fatalf("the screen has colour (%q):\n%s", m, screen)
		case m == "" && neg:
			ts.Fatalf("the screen has no colour:\n%s", screen)
		}
	case "exited":
		if len(args) != 2 {
			ts.Fatalf("usage: tui exited N")
		}
		tuiExited(ts, p, args[1])
	default:
		ts.Fatalf("tui: unknown subcommand %q", args[0])
	}
}

func tuiStart(ts *testscript.TestScript) {
	// Not under $WORK: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "tmx")
	ts.Check(err)
	p := &tuiPane{socket: filepath.Join(dir, "s"), exit: ts.MkAbs("tui.exit")}
	ts.Defer(func() {
		p.tmux("kill-server")
		os.RemoveAll(dir)
	})
	// The wrapper records the exit code and whether the terminal's modes
	// came back as they were, then keeps the pane open to be inspected.
	wrapper := `before=$(stty -g); boxkite tui; code=$?; after=$(stty -g)
[ "$before" = "$after" ] && echo "tty restored"; echo "tui exited $code"; echo $code >"$1"; exec sleep 3600`
	// tmux runs with the script's whole environment, as exec would, so
	// the TUI sees what every other boxkite of the script sees
	// (BOXKITE_URL, BOXKITE_API_KEY, BOXKITE_ORG…): the new tmux server
	// takes its environment from this client. It once got a fixed list
	// of variables instead, and a TUI under `env BOXKITE_URL=…` talked
	// to the context's server. Like exec, it replaces stdout and stderr.
	args := []string{"tmux", "-S", p.socket, "-f", "/dev/null", "new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", "sh", "-c", wrapper, "sh", p.exit}
	for _, kv := range []string{"LANG=C.UTF-8", "TERM=xterm-256color"} {
		if k, _, _ := strings.Cut(kv, "="); ts.Getenv(k) == "" {
			args = append([]string{kv}, args...)
		}
	}
	if err := ts.Exec("env", args...); err != nil {
		ts.Fatalf("tmux new-session: %v\n%s", err, ts.ReadFile("stderr"))
	}
	ts.Setenv("TUI_SOCKET", p.socket)
}

// tuiWait polls the screen until re matches it, and logs how long that took.
func tuiWait(ts *testscript.TestScript, p *tuiPane, re string) {
	rx, err := regexp.Compile(re)
	if err != nil {
		ts.Fatalf("tui wait: %v", err)
	}
	start := time.Now()
	var screen string
	for time.Since(start) < tuiDeadline {
		screen = p.capture(ts, false)
		if rx.MatchString(screen) {
			ts.Logf("tui: %q on screen after %s", re, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("tui: %q not on screen after %s:\n%s", re, tuiDeadline, screen)
}

// tuiExited waits for the TUI to exit, checks its exit code, and checks
// it gave the terminal back: the alternate screen left, the cursor shown,
// the tty modes as before, and the shell carrying on.
func tuiExited(ts *testscript.TestScript, p *tuiPane, want string) {
	start := time.Now()
	var b []byte
	for {
		var err error
		if b, err = os.ReadFile(p.exit); err == nil && len(b) > 0 {
			break
		}
		if time.Since(start) > tuiDeadline {
			ts.Fatalf("tui did not exit within %s:\n%s", tuiDeadline, p.capture(ts, false))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.TrimSpace(string(b)); got != want {
		ts.Fatalf("tui exited with %s, want %s:\n%s", got, want, p.capture(ts, false))
	}
	// The exit file can be written before tmux has read the TUI's last
	// output (leaving the alternate screen, showing the cursor): ask until
	// it has, within the deadline.
	for {
		out, err := p.tmux("display-message", "-p", "-t", "tui", "#{alternate_on} #{cursor_flag}")
		if err != nil {
			ts.Fatalf("tmux display-message: %v\n%s", err, out)
		}
		got := strings.TrimSpace(out)
		if got == "0 1" {
			break
		}
		if time.Since(start) > tuiDeadline {
			ts.Fatalf("after exit: alternate screen and cursor flags %q, want \"0 1\" (normal screen, cursor shown)", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tuiWait(ts, p, "(?m)^tty restored\n+tui exited "+regexp.QuoteMeta(want)+"$")
}
