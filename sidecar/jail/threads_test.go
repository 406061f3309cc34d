package jail

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTrimThreads: threads a burst left idle are ended, and a call with
// nothing to trim returns at once without churning.
func TestTrimThreads(t *testing.T) {
	before, err := CountThreads()
	if err != nil {
		t.Fatal(err)
	}
	// The burst: goroutines that hold threads of their own at once, as
	// goroutines blocked in syscalls do. Locked to them, so that each is a
	// thread whatever the load (a blocking syscall gets a thread of its
	// own only if sysmon wakes before it returns) and whatever threads
	// were idle before (an earlier test's, reused by the burst). Unlocked
	// before they return, those threads stay, idle.
	k := before + 4
	holdThreads(k)()
	burst, err := CountThreads()
	if err != nil {
		t.Fatal(err)
	}
	if burst < k {
		t.Fatalf("%d threads after a burst of %d locked goroutines, %d before", burst, k, before)
	}
	target := burst - 4
	got, err := TrimThreads(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("threads: %d before, %d after the burst, %d after TrimThreads(%d)", before, burst, got, target)
	if got > target {
		t.Errorf("TrimThreads(%d) = %d, want at most %d", target, got, target)
	}
	// Nothing idle below the floor: it returns without ending the rest.
	floor, err := TrimThreads(1)
	if err != nil {
		t.Fatal(err)
	}
	if floor < 3 {
		t.Errorf("TrimThreads(1) = %d: the runtime's own threads cannot go", floor)
	}
}

// TestTrimThreadsKeepsParents: a thread that forked a command still
// running is never ended, so the command stays its child (had it ended,
// Linux would give the command to the main thread, whose orphan reaper in
// a jail takes the exit status its waiter needs) and alive (a command
// started with Pdeathsig is killed when the thread that forked it ends).
func TestTrimThreadsKeepsParents(t *testing.T) {
	type fork struct {
		tid int
		cmd *exec.Cmd
	}
	forks := make([]fork, 4)
	var wg sync.WaitGroup
	for i := range forks {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Long past the trim (which waits up to a second for each
			// thread it ends, more under load): a command that exited on
			// its own would look killed. The deferred Kill ends it.
			cmd := exec.Command("sleep", "600")
			// Killed if its parent thread ends: it must stay alive too.
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			forks[i] = fork{tid: unix.Gettid(), cmd: cmd}
		})
	}
	wg.Wait()
	defer func() {
		for _, f := range forks {
			if f.cmd != nil {
				_ = f.cmd.Process.Kill()
				_ = f.cmd.Wait()
			}
		}
	}()
	if t.Failed() {
		t.FailNow()
	}
	// Threads idle now, the forkers among them: trim as far as it goes.
	if _, err := TrimThreads(1); err != nil {
		t.Fatal(err)
	}
	for _, f := range forks {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", f.cmd.Process.Pid)); err != nil || strings.Contains(string(stat), ") Z ") {
			t.Errorf("command %d (Pdeathsig SIGKILL) did not survive the trim: %q %v", f.cmd.Process.Pid, stat, err)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/children", f.tid))
		if err != nil {
			t.Errorf("the thread that forked %d was ended: %v", f.cmd.Process.Pid, err)
			continue
		}
		if !slices.Contains(strings.Fields(string(b)), strconv.Itoa(f.cmd.Process.Pid)) {
			t.Errorf("thread %d's children %q lack %d", f.tid, b, f.cmd.Process.Pid)
		}
	}
}

// TestCountThreads: the raw count (no system call the runtime knows of,
// so no P handed off while counting) agrees with /proc/self/task read the
// ordinary way, also past one getdents buffer of threads.
func TestCountThreads(t *testing.T) {
	const k = 150 // ~24 bytes a /proc/self/task entry: past 2 KiB
	defer holdThreads(k)()
	for try := 0; ; try++ {
		got, err := CountThreads()
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		if got == len(tasks) {
			if got < k {
				t.Errorf("CountThreads() = %d with %d goroutines locked to threads", got, k)
			}
			return
		}
		if try == 20 { // the runtime may start one between the two reads
			t.Fatalf("CountThreads() = %d, /proc/self/task lists %d", got, len(tasks))
		}
	}
}

// holdThreads has k goroutines hold a thread each, locked to it, and
// returns once they all do; release lets them return (unlocked first, so
// the threads stay, idle).
func holdThreads(k int) (release func()) {
	var locked, wg sync.WaitGroup
	done := make(chan struct{})
	locked.Add(k)
	for range k {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			locked.Done()
			<-done
		})
	}
	locked.Wait()
	return func() { close(done); wg.Wait() }
}
