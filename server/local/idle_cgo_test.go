//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/cgosidecar"
)

// TestIdleTwoProcessSidecarThreads: a sidecar linked with cgo cannot lock
// every thread down, so its jail runs two processes, init and its child
// serve (cmd/boxkite-sidecar's runInit). Once idle, serve holds at most
// five threads however many a burst of concurrent execs made it start:
// it runs with one P, as the one-process sidecar does, and a second after
// its last request ends the idle threads (--idle-threads). Five, not
// four: its os/signal handling keeps a thread locked for good. Without
// that, 40 such sandboxes made at load 14 held 13-18 threads each
// (issue 27, session 22). Takes about 3 s on a quiet host, plus the build.
func TestIdleTwoProcessSidecarThreads(t *testing.T) {
	t.Parallel()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: cgosidecar.Build(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	ep := create(t, d, "twoproc")
	st, err := readState(d.sandboxDir("twoproc"))
	if err != nil {
		t.Fatal(err)
	}
	serve := onlyChild(t, st.PID)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { run(t, ep, "sleep 0.2; ls /") })
	}
	wg.Wait()
	busy := taskCount(t, serve)
	var idle int
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if idle = taskCount(t, serve); idle <= 5 {
			break
		}
	}
	t.Logf("serve's threads: %d after six concurrent execs, %d once idle; init's: %d", busy, idle, taskCount(t, st.PID))
	if idle > 5 {
		t.Errorf("an idle two-process sidecar's serve holds %d threads, want at most 5", idle)
	}
	run(t, ep, "true") // still answers with its threads trimmed
}

// onlyChild is the pid of pid's one child process.
func onlyChild(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("process %d has children %q, want one", pid, f)
	}
	child, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return child
}
