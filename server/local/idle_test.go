package local

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIdleSidecarSleeps: an idle jail's sidecar (its init too, issue 27)
// sleeps, also after its orphan reaper's first timed wake
// (jail.ReapOrphans sleeps 5 s at a time). Takes about 7 s.
func TestIdleSidecarSleeps(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "idle")
	run(t, ep, "true")
	st, err := readState(d.sandboxDir("idle"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // past the reaper's first wake
	before := switches(t, st.PID)
	time.Sleep(time.Second)
	// The main thread sleeps in the reaper: a loop that does not sleep
	// switches about a hundred times a second on this machine.
	used := switches(t, st.PID) - before
	t.Logf("idle sidecar's main thread: %d context switches in 1 s", used)
	if used > 5 {
		t.Errorf("the idle sidecar's main thread switched %d times in 1 s; it should sleep", used)
	}
}

// switches is the context switches of a process's main thread.
func switches(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
			var c int
			if _, err := fmt.Sscan(v, &c); err != nil {
				t.Fatal(err)
			}
			n += c
		}
	}
	return n
}

// TestIdleSidecarThreads: an idle jail's sidecar holds at most four
// threads (issue 27), also after concurrent execs made it start more:
// a second after its last request it ends the idle ones
// (jail.TrimThreads), and after its orphan reaper's wake. Takes about 8 s.
func TestIdleSidecarThreads(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "threads")
	st, err := readState(d.sandboxDir("threads"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { run(t, ep, "sleep 0.2; ls /") })
	}
	wg.Wait()
	busy := taskCount(t, st.PID)
	var idle int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if idle = taskCount(t, st.PID); idle <= 4 {
			break
		}
	}
	t.Logf("sidecar threads: %d after six concurrent execs, %d once idle", busy, idle)
	if idle > 4 {
		t.Errorf("an idle sidecar holds %d threads, want at most 4", idle)
	}
	// Each wake of the orphan reaper (every 5 s) makes a spare thread,
	// which the sidecar ends from 100 ms later (again every 100 ms while
	// a trim gains nothing). Waited for until just before the next wake:
	// on a loaded host the trims run late.
	time.Sleep(5500 * time.Millisecond)
	later := taskCount(t, st.PID)
	for deadline := time.Now().Add(4 * time.Second); later > 4 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		later = taskCount(t, st.PID)
	}
	if later > 4 {
		t.Errorf("an idle sidecar holds %d threads after its reaper woke, want at most 4", later)
	}
	run(t, ep, "true") // still answers with its threads trimmed
}

// taskCount is the number of a process's threads.
func taskCount(t testing.TB, pid int) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// TestSidecarStartsWithOneP checks that a jail's sidecar has GOMAXPROCS=1
// from its runtime's start (jail.Start's environment: setting it later
// cost every start a stop-the-world and ~60 page faults, issue 27), and
// that the variable does not reach the sandbox's commands.
func TestSidecarStartsWithOneP(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "onep")
	st, err := readState(d.sandboxDir("onep"))
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.PID))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(environ), "\x00"), "GOMAXPROCS=1") {
		t.Errorf("sidecar environment %q lacks GOMAXPROCS=1", environ)
	}
	if res := run(t, ep, "echo ${GOMAXPROCS-unset}"); strings.TrimSpace(res.Stdout) != "unset" {
		t.Errorf("a command sees GOMAXPROCS=%q", res.Stdout)
	}
}

// TestReaperOnLeader: every jail's sidecar reaps orphans on its leader
// thread, the pid namespace's child reaper that the kernel gives orphans
// to (jail.ReapOrphans waits for the calling thread's children only).
// Without the sidecar's init-time thread lock the main goroutine moved to
// another thread in about one jail in thirty under load: its orphans
// stayed zombies and its idle leader was a fifth thread. Takes ~10 s.
func TestReaperOnLeader(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	const n = 30
	for i := range n {
		id := fmt.Sprintf("leader%d", i)
		create(t, d, id)
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			t.Fatal(err)
		}
		// The leader sleeps in the reaper's ppoll but for an instant
		// each wake; look a few times.
		inPpoll := false
		for try := 0; try < 20 && !inPpoll; try++ {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", st.PID, st.PID))
			if err != nil {
				t.Fatal(err)
			}
			nr, _, _ := strings.Cut(string(b), " ")
			inPpoll = nr == strconv.Itoa(unix.SYS_PPOLL)
			if !inPpoll {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if !inPpoll {
			t.Errorf("sandbox %d: the sidecar's leader thread is not in the orphan reaper's ppoll", i)
		}
		if err := d.Delete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}
