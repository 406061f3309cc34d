package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestDownWaitsForServerStop: `boxkite down` gives a server that takes
// longer than the old 10 s to stop (its final storage flush) the time it
// needs, instead of SIGKILLing it, and shows progress on a terminal.
func TestDownWaitsForServerStop(t *testing.T) {
	t.Parallel()
	if serverStopTimeout <= api.ServerStopBound {
		t.Fatalf("down waits %v, less than the server's own stop bound %v", serverStopTimeout, api.ServerStopBound)
	}
	dir := t.TempDir()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, serverBinary) // named as down expects
	if err := os.Symlink(sh, bin); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "flushed")
	// A server whose stop takes 12 s, then records that it finished.
	script := `trap 'sleep 12; echo done > "` + marker + `"; exit 0' TERM; while :; do sleep 1; done`
	cmd := exec.Command(bin, "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	})
	// Wait (hang guard only) until the shell has set its trap: it runs
	// its loop's sleep by then.
	deadline := time.Now().Add(30 * time.Second)
	for !hasChild(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the fake server never started its loop")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p := pathsFor(dir)
	if err := writePID(p.pid, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	app := &App{IO: IO{Out: &bytes.Buffer{}, ErrOut: &errOut, ErrTTY: true}}
	if err := stopLocalServer(t.Context(), app, p); err != nil {
		t.Fatalf("down: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the server was killed before it finished stopping: %v", err)
	}
	if !strings.Contains(errOut.String(), "stopping the boxkite server") || !strings.Contains(errOut.String(), "stopped") {
		t.Errorf("down's stderr shows no progress: %q", errOut.String())
	}
}

// hasChild reports whether pid has a child process.
func hasChild(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	return err == nil && len(bytes.TrimSpace(b)) > 0
}
