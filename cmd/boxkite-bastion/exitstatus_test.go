//go:build linux

package main

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/lockedbuf"
	gossh "golang.org/x/crypto/ssh"
)

// TestExitStatus checks that an ssh session through the bastion exits as
// the command or the shell in the sandbox did, with the real OpenSSH
// client (`ssh …; echo $?`): the exit-status request for an exit, and
// exit-signal for a death by signal (ssh then exits 255, as with sshd),
// for a command, the shared terminal's shell on a PTY and without one.
func TestExitStatus(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name  string
		flags []string
		cmd   []string
		stdin string // without a PTY
		typed string // on a PTY (-tt), typed once the prompt shows
		want  int
	}{
		{name: "command exit 5", cmd: []string{"exit 5"}, want: 5},
		{name: "command exit 0", cmd: []string{"true"}, want: 0},
		{name: "command on a PTY exit 6", flags: []string{"-tt"}, cmd: []string{"exit 6"}, want: 6},
		{name: "command killed by SIGTERM", cmd: []string{"kill -TERM $$"}, want: 255},
		{name: "shell on a PTY exit 5", typed: "exit 5\r", want: 5},
		{name: "shell on a PTY killed", typed: "kill -KILL $$\r", want: 255},
		{name: "shell without a PTY exit 7", stdin: "echo hi\nexit 7\n", want: 7},
		{name: "shell without a PTY to the end of its input", stdin: "echo hi\nfalse\n", want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.typed == "" {
				cmd := f.sshCmd(t, f.sshArgs(f.goodKey, c.flags, c.cmd...), "")
				cmd.Stdin = strings.NewReader(c.stdin)
				var stdout, stderr lockedbuf.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := waitGuarded(t, cmd)
				if got := exitCodeOf(t, err); got != c.want {
					t.Errorf("ssh exited %d, want %d; stdout %q, stderr %q", got, c.want, stdout.String(), stderr.String())
				}
				return
			}
			s := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
			s.typeText("echo ready-$((6*7))\r")
			s.expect("ready-42")
			s.typeText(c.typed)
			err := waitStarted(t, s.cmd)
			if got := exitCodeOf(t, err); got != c.want {
				t.Errorf("ssh -tt, then %q: exited %d, want %d; screen %q", c.typed, got, c.want, s.text())
			}
		})
	}

	// What ssh cannot show, Go's client can: the signal's name.
	conn, err := gossh.Dial("tcp", f.addr, f.goClientConfig(t))
	if err != nil {
		t.Fatalf("dial the bastion: %v", err)
	}
	defer conn.Close()
	for _, c := range []struct {
		name, cmd, stdin, signal string
		code                     int
	}{
		{name: "command exit", cmd: "exit 9", code: 9},
		{name: "command SIGTERM", cmd: "kill -TERM $$", signal: "TERM"},
		{name: "command SIGINT", cmd: "kill -INT $$", signal: "INT"},
		{name: "shell SIGKILL", stdin: "kill -KILL $$\n", signal: "KILL"},
	} {
		t.Run("x/crypto/ssh "+c.name, func(t *testing.T) {
			sess, err := conn.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if c.cmd != "" {
				err = sess.Run(c.cmd)
			} else {
				// The input stays open: the shell ends, not the input.
				in, perr := sess.StdinPipe()
				if perr != nil {
					t.Fatal(perr)
				}
				defer in.Close()
				if err := sess.Shell(); err != nil {
					t.Fatal(err)
				}
				if _, err := in.Write([]byte(c.stdin)); err != nil {
					t.Fatal(err)
				}
				err = sess.Wait()
			}
			var ee *gossh.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("session ended with %v, want an exit error", err)
			}
			if ee.Signal() != c.signal || (c.signal == "" && ee.ExitStatus() != c.code) {
				t.Errorf("session ended with status %d, signal %q; want status %d, signal %q", ee.ExitStatus(), ee.Signal(), c.code, c.signal)
			}
		})
	}
}

// goClientConfig is the configuration of a Go SSH client that logs in
// with the registered key.
func (f *fixture) goClientConfig(t *testing.T) *gossh.ClientConfig {
	t.Helper()
	key, err := os.ReadFile(f.goodKey)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &gossh.ClientConfig{
		User: f.sandbox, Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 30 * time.Second,
	}
}

// exitCodeOf is the exit code of a finished command's Wait error.
func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) {
		t.Fatalf("ssh: %v", err)
	}
	return ee.ExitCode()
}

// TestMemoryLimitNote: a command the sandbox's memory limit killed ends
// its ssh session with a line on stderr that says so (the control plane's
// exit frame has stop_reason memory_limit) and the status the kill left
// (exit 137 from the shell that ran it, or exit-signal KILL, ssh's 255);
// a kill -9 ends as it did, without the line. Before, nothing was said.
func TestMemoryLimitNote(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" { // CI runs as root
		t.Skip("sandboxes have a memory limit (cgroups) as root only")
	}
	f := newFixture(t, nil)
	const note = "killed at the sandbox's memory limit"
	for _, c := range []struct {
		name, cmd string
		note      bool
	}{
		{"memory hog", `python3 -c 'b = b"x" * (4 << 30); print("survived")'`, true},
		{"kill -9", "kill -9 $$", false},
	} {
		// The shell may outlive the hog it ran (exit 137) or exec it
		// (exit-signal KILL); either is how the kill ended it.
		cmd := f.sshCmd(t, f.sshArgs(f.goodKey, nil, c.cmd), "")
		var stdout, stderr lockedbuf.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := waitGuarded(t, cmd)
		if got := exitCodeOf(t, err); got != 137 && got != 255 || strings.Contains(stdout.String(), "survived") {
			t.Errorf("%s: ssh exited %d (stdout %q), want 137 or 255 (exit-signal KILL)", c.name, got, stdout.String())
		}
		if got := strings.Contains(stderr.String(), note); got != c.note {
			t.Errorf("%s: stderr %q; says %q: %v, want %v", c.name, stderr.String(), note, got, c.note)
		}
	}
}
