package kube_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// TestInteractiveExec runs the interactive exec (what the bastion uses for
// ssh commands, ssh -t and the sftp subsystem) against a sandbox pod of the
// kube driver: streamed stdin byte-exact, a PTY of the asked size, and an
// SFTP session served in the pod.
func TestInteractiveExec(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	data := bytes.Repeat([]byte("kube\x00\xff\r\n"), 64<<10)
	x, err := c.StartInteractive(ctx, sb.ID, api.InteractiveRequest{Command: "cat > in.bin && sha256sum in.bin"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code, err := x.Run(ctx, bytes.NewReader(data), &stdout, &stderr)
	sum := sha256.Sum256(data)
	if err != nil || code != 0 || !strings.HasPrefix(stdout.String(), hex.EncodeToString(sum[:])) {
		t.Errorf("cat > f < %d bytes: %d, %v, stdout %q, stderr %q; want its sha256", len(data), code, err, stdout.String(), stderr.String())
	}

	x, err = c.StartInteractive(ctx, sb.ID, api.InteractiveRequest{Command: "stty size; exit 3", TTY: true, Cols: 97, Rows: 31})
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code, err := x.Run(ctx, nil, &stdout, io.Discard); err != nil || code != 3 || !strings.Contains(stdout.String(), "31 97") {
		t.Errorf("stty size on a pty: %d, %v, %q; want 3 and 31 97", code, err, stdout.String())
	}

	x, err = c.StartInteractive(ctx, sb.ID, api.InteractiveRequest{Subsystem: api.SubsystemSFTP})
	if err != nil {
		t.Fatal(err)
	}
	toServer, feed := io.Pipe()
	fromServer, out := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := x.Run(ctx, toServer, out, io.Discard)
		out.Close()
		done <- err
	}()
	sc, err := sftp.NewClientPipe(fromServer, feed)
	if err != nil {
		t.Fatalf("sftp handshake: %v", err)
	}
	f, err := sc.Create("via-sftp.txt")
	if err == nil {
		_, err = f.Write([]byte("hello over sftp"))
		f.Close()
	}
	if err != nil {
		t.Fatalf("sftp write: %v", err)
	}
	sc.Close()
	feed.Close()
	if err := <-done; err != nil {
		t.Errorf("the sftp session ended with %v", err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "cat via-sftp.txt"})
	if err != nil || res.Stdout != "hello over sftp" {
		t.Errorf("the file sftp wrote: %+v, %v", res, err)
	}

	// The terminal of a pod's sidecar, detached once idle (an ssh session
	// with no PTY at the end of its input): the output of what was typed,
	// printed after the detach too, comes before the end.
	term, err := c.Attach(ctx, sb.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if _, err := io.WriteString(term, "echo x; sleep 0.3; echo after-$((6*7))\n"); err != nil {
		t.Fatal(err)
	}
	if err := term.DetachWhenIdle(); err != nil {
		t.Fatal(err)
	}
	screen, err := io.ReadAll(term)
	if err != nil || !strings.Contains(string(screen), "after-42") {
		t.Errorf("detach when idle: %v, screen %q; want io.EOF after the command's output", err, screen)
	}
}

// TestKubeExitsAndSignals runs, against a pod's sidecar, what the bastion
// and boxkite exec's Ctrl-C rely on: the terminal's shell tells its exit
// status before the close, and a streamed exec named by its X-Exec-Id
// takes a signal (its trap runs and chooses the exit code).
func TestKubeExitsAndSignals(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	term, err := c.Attach(ctx, sb.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if _, err := io.WriteString(term, "exit 4\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(term); err != nil {
		t.Fatalf("read until the shell exited: %v", err)
	}
	if code, sig, ok := term.Exited(); code != 4 || sig != 0 || !ok {
		t.Errorf("the shell's exit: %d, %d, %v; want 4, 0, true", code, sig, ok)
	}

	var execID string
	var stdout strings.Builder
	res, err := c.ExecStreamStarted(ctx, sb.ID, api.ExecRequest{Command: "trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.1; done", Timeout: 60},
		func(id string) { execID = id },
		func(ev api.ExecEvent) error {
			stdout.WriteString(ev.Data)
			if ev.Data == "ready\n" {
				_, err := c.SignalExec(ctx, sb.ID, execID, api.SignalINT)
				return err
			}
			return nil
		})
	if err != nil || res.ExitCode != 3 || !strings.Contains(stdout.String(), "got-int") {
		t.Errorf("a streamed exec sent SIGINT: %+v, %v, stdout %q; want the trap's exit 3", res, err, stdout.String())
	}
}
