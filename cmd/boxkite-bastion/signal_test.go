//go:build linux

package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/internal/lockedbuf"
)

// TestSignal sends a command run through the bastion without a PTY
// (`ssh id@host cmd`) a signal request (RFC 4254 §6.9), as an SSH client
// does: OpenSSH's ssh sends none itself, so Go's x/crypto/ssh client is the
// real client here. The signal reaches the command's process group in the
// sandbox, which takes it its own way (a trap runs, and the session exits
// with the code the trap chose), or dies of it (exit-signal); one the
// bastion does not forward (USR1) is dropped, as sshd drops one it does
// not know.
func TestSignal(t *testing.T) {
	f := newFixture(t, nil)
	conn, err := gossh.Dial("tcp", f.addr, f.goClientConfig(t))
	if err != nil {
		t.Fatalf("dial the bastion: %v", err)
	}
	defer conn.Close()
	const loop = "echo ready; while :; do sleep 0.1; done"
	for _, c := range []struct {
		name    string
		cmd     string
		signals []gossh.Signal
		code    int
		signal  string // the exit-signal, when the command died of one
		stdout  string
	}{
		{
			name: "INT runs a trap", cmd: "trap 'echo trapped-int; exit 7' INT; " + loop,
			signals: []gossh.Signal{gossh.SIGINT}, code: 7, stdout: "ready\ntrapped-int\n",
		},
		{
			name: "TERM runs a trap", cmd: "trap 'echo trapped-term; exit 8' TERM; " + loop,
			signals: []gossh.Signal{gossh.SIGTERM}, code: 8, stdout: "ready\ntrapped-term\n",
		},
		{
			name: "HUP ends a command without a trap", cmd: "echo ready; exec sleep 120",
			signals: []gossh.Signal{gossh.SIGHUP}, signal: "HUP", stdout: "ready\n",
		},
		{
			name: "KILL kills a command that ignores INT", cmd: "trap '' INT; echo ready; exec sleep 120",
			signals: []gossh.Signal{gossh.SIGINT, gossh.SIGKILL}, signal: "KILL", stdout: "ready\n",
		},
		{
			name: "USR1 is dropped", cmd: "trap 'echo usr1' USR1; trap 'echo trapped-int; exit 5' INT; " + loop,
			signals: []gossh.Signal{gossh.SIGUSR1, gossh.SIGINT}, code: 5, stdout: "ready\ntrapped-int\n",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess, err := conn.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			out, err := sess.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr lockedbuf.Buffer
			sess.Stderr = &stderr
			if err := sess.Start(c.cmd); err != nil {
				t.Fatal(err)
			}
			// The signals go once the command runs in the sandbox.
			ready := make([]byte, len("ready\n"))
			if _, err := io.ReadFull(out, ready); err != nil || string(ready) != "ready\n" {
				t.Fatalf("stdout %q (%v), want ready; stderr %q", ready, err, stderr.String())
			}
			for _, sig := range c.signals {
				if err := sess.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			rest := make(chan string, 1)
			go func() {
				var b strings.Builder
				buf := make([]byte, 512)
				for {
					n, err := out.Read(buf)
					b.Write(buf[:n])
					if err != nil {
						rest <- b.String()
						return
					}
				}
			}()
			done := make(chan error, 1)
			go func() { done <- sess.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("the command did not end after %v; stderr %q", c.signals, stderr.String())
			}
			var ee *gossh.ExitError
			if !errors.As(werr, &ee) {
				t.Fatalf("session ended with %v, want status %d, signal %q", werr, c.code, c.signal)
			}
			if ee.Signal() != c.signal || (c.signal == "" && ee.ExitStatus() != c.code) {
				t.Errorf("session ended with status %d, signal %q; want status %d, signal %q; stderr %q",
					ee.ExitStatus(), ee.Signal(), c.code, c.signal, stderr.String())
			}
			if got := "ready\n" + <-rest; got != c.stdout {
				t.Errorf("stdout %q, want %q", got, c.stdout)
			}
		})
	}
}
