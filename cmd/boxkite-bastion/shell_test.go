//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/lockedbuf"
)

// TestShellWithoutPTYEndsAtEOF runs the scripts' ways of reaching the
// terminal with no PTY and no command: each session types its input into
// the shared terminal, ends at the end of that input with status 0 once
// the shell ran it, with all its output (the screen replayed first, and
// what the commands print after the input ended: a sleep, a command
// substitution), and the terminal goes on for the person watching it on a
// PTY.
func TestShellWithoutPTYEndsAtEOF(t *testing.T) {
	f := newFixture(t, nil)
	watcher := f.interactive(t, f.sshArgs(f.goodKey, nil), "")
	watcher.typeText("echo ready-$((6*7))\r")
	watcher.expect("ready-42")
	cases := []struct {
		name  string
		flags []string
		cmd   []string
		stdin string
		want  string // in its output
	}{
		{name: "stdin at EOF", want: "ready-42"},
		{name: "a line typed", stdin: "echo typed-$((6*7))-a\n", want: "typed-42-a"},
		{
			name:  "output after the end of input",
			stdin: "echo x; sleep 0.3; echo after-$((6*7))\ny=$(sleep 0.3; echo sub-$((6*7))); echo \"got $y\"\n",
			want:  "got sub-42",
		},
		{name: "-T and an empty command", flags: []string{"-T"}, cmd: []string{""}, stdin: "echo typed-$((6*7))-b\n"},
		{name: "two lines, the last unterminated", stdin: "true\necho typed-$((6*7))-c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := f.sshCmd(t, f.sshArgs(f.goodKey, c.flags, c.cmd...), "")
			cmd.Stdin = strings.NewReader(c.stdin)
			var stdout, stderr lockedbuf.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := waitGuarded(t, cmd); err != nil {
				t.Fatalf("ssh without a PTY: %v, stderr %q; want exit 0", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), c.want) || (strings.Contains(c.stdin, "after-") && !strings.Contains(stdout.String(), "after-42")) {
				t.Errorf("ssh without a PTY: stdout %q; want it to hold %q and the output of every command", stdout.String(), c.want)
			}
		})
	}
	// What the sessions typed reached the shell (the unterminated last
	// line too, completed here), and the shell still serves the watcher.
	watcher.typeText("\r")
	for _, s := range []string{"a", "b", "c"} {
		watcher.expect(fmt.Sprintf("typed-42-%s", s))
	}
	watcher.typeText("echo still-$((6*7))\r")
	watcher.expect("still-42")
}

// waitGuarded runs cmd to its end; the deadline only guards against a hang.
func waitGuarded(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return waitStarted(t, cmd)
}

// waitStarted waits for a started cmd to end; the deadline only guards
// against a hang.
func waitStarted(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("ssh did not end within 60 s of its input ending")
		return nil
	}
}
