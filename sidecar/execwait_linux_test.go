package sidecar

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"golang.org/x/sys/unix"
)

// TestWaitStatus: the status await decodes from waitid's siginfo is the
// one os/exec reads with wait4, for an exit and deaths by signal.
func TestWaitStatus(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"true", "exit 3", "exit 255", "kill -9 $$", "kill -TERM $$", "ulimit -c 0; kill -SEGV $$"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("/bin/sh", "-c", command)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
			if err != nil {
				t.Skipf("no pidfd: %v", err)
			}
			defer unix.Close(pidfd)
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			want := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if got := waitStatus(&info); got != want {
				t.Errorf("waitStatus %#x, want %#x (os/exec's)", got, want)
			}
			if got := siginfoPid(&info); int(got) != cmd.Process.Pid {
				t.Errorf("siginfoPid %d, want %d", got, cmd.Process.Pid)
			}
		})
	}
}

// TestExecPollersReused: concurrent execs each get an epoll instance of
// their own and every output whole; finished execs leave theirs for the
// next, so sequential execs make none.
func TestExecPollersReused(t *testing.T) {
	t.Parallel()
	h := New(Options{Token: testToken, Workspace: t.TempDir()})
	spec := func(command string) execSpec {
		s, err := h.execSpec(execRequest{ExecRequest: api.ExecRequest{Command: command}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var stdout, stderr strings.Builder
			out := h.run(context.Background(), spec(fmt.Sprintf("seq 1 20000; echo err%d >&2; sleep 0.2; exit %d", i, i)), func(stream string, p []byte) {
				if stream == api.EventStdout {
					stdout.Write(p)
				} else {
					stderr.Write(p)
				}
			})
			var want strings.Builder
			for k := 1; k <= 20000; k++ {
				fmt.Fprintln(&want, k)
			}
			if out.exitCode != i || stdout.String() != want.String() || stderr.String() != fmt.Sprintf("err%d\n", i) {
				t.Errorf("exec %d: exit %d, %d bytes of stdout (want %d), stderr %q", i, out.exitCode, stdout.Len(), want.Len(), stderr.String())
			}
		})
	}
	wg.Wait()
	made := len(h.pollers.free)
	if made < 1 || made > n {
		t.Fatalf("%d epoll instances after %d concurrent execs, want 1 to %d", made, n, n)
	}
	for range 3 {
		if out := h.run(context.Background(), spec("true"), func(string, []byte) {}); out.exitCode != 0 {
			t.Fatalf("true: exit %d", out.exitCode)
		}
	}
	if got := len(h.pollers.free); got != made {
		t.Errorf("%d epoll instances after sequential execs, want the %d there were", got, made)
	}
}

func spec0(t *testing.T, h *Handler) execSpec {
	t.Helper()
	s, err := h.execSpec(execRequest{ExecRequest: api.ExecRequest{Command: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExecWaitsWithoutGoroutines: while a command runs, its exec adds no
// goroutine (the wait is the handler's own; issue 27).
func TestExecWaitsWithoutGoroutines(t *testing.T) {
	h := New(Options{Token: testToken, Workspace: t.TempDir()})
	s, err := h.execSpec(execRequest{ExecRequest: api.ExecRequest{Command: "sleep 1"}})
	if err != nil {
		t.Fatal(err)
	}
	h.run(context.Background(), spec0(t, h), func(string, []byte) {}) // what the first exec sets up
	done := make(chan outcome)
	before := runtime.NumGoroutine()
	go func() { done <- h.run(context.Background(), s, func(string, []byte) {}) }()
	during := 1 << 30
	for range 3 {
		time.Sleep(150 * time.Millisecond) // into the sleep; the least of three, were a stray goroutine ending
		during = min(during, runtime.NumGoroutine())
	}
	if out := <-done; out.exitCode != 0 {
		t.Fatalf("exit %d", out.exitCode)
	}
	if during > before+1 { // the run's own
		t.Errorf("%d goroutines while the command ran, %d before: the wait added %d", during, before, during-before-1)
	}
}

// BenchmarkExecRun is an exec of true below HTTP: the start, the wait and
// the outcome, through spawn when run as root (the sandbox user's ids, as
// in a jail), else os/exec. Its allocs/op are the sidecar's own per exec
// (issue 27).
func BenchmarkExecRun(b *testing.B) {
	opts := Options{Token: testToken, Workspace: b.TempDir()}
	if os.Getuid() == 0 {
		for _, dir := range []string{filepath.Dir(opts.Workspace), opts.Workspace} {
			if err := os.Chmod(dir, 0o777); err != nil {
				b.Fatal(err)
			}
		}
		opts.RunAs = &RunAs{UID: 1001, GID: 1002}
	}
	h := New(opts)
	s, err := h.execSpec(execRequest{ExecRequest: api.ExecRequest{Command: "true"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := h.run(context.Background(), s, func(string, []byte) {}); out.exitCode != 0 {
			b.Fatalf("true: exit %d (%v)", out.exitCode, out.spawnErr)
		}
	}
}
