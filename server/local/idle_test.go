//go:build linux

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
// sleeps, also after its orphan reaper woke: a signal to the main thread
// wakes it as an orphan's SIGCHLD does (jail.ReapOrphans), and it must
// sleep again. Takes about 2 s.
func TestIdleSidecarSleeps(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "idle")
	run(t, ep, "true")
	st, err := readState(d.sandboxDir("idle"))
	if err != nil {
		t.Fatal(err)
	}
	wakeReaper(t, st.PID)
	time.Sleep(500 * time.Millisecond) // past the trim after the wake
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

// wakeReaper ends the orphan reaper's sleep in the sidecar whose host pid
// is pid: a SIGCHLD to its main thread, which is what an orphan's exit
// sends (the Go runtime catches it, so it reaches a namespace's init).
func wakeReaper(t *testing.T, pid int) {
	t.Helper()
	if err := unix.Tgkill(pid, pid, unix.SIGCHLD); err != nil {
		t.Fatalf("wake the orphan reaper: %v", err)
	}
}

// TestOrphanReapedAtExit: a process orphaned into the jail is reaped as
// it exits, not at the reaper's next timed wake (minutes away, so that
// idle sandboxes cost the host no CPU; issue 27): its SIGCHLD wakes the
// reaper. The orphan is `sleep` left behind by a shell that exited.
func TestOrphanReapedAtExit(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "orphan")
	st, err := readState(d.sandboxDir("orphan"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, ep, "sleep 1 </dev/null >/dev/null 2>&1 & echo $!")
	var seen bool
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		kids := childrenOf(t, st.PID)
		if len(kids) > 0 {
			seen = true
			continue
		}
		if seen {
			return
		}
	}
	if !seen {
		t.Fatal("the orphaned sleep never showed as the sidecar's child")
	}
	t.Errorf("the orphan is still the sidecar's child a minute on: %v (a zombie is \"Z\")", childrenOf(t, st.PID))
}

// TestReaperWaitsForExecOrphans: an orphan an exec leaves behind is
// reparented to the jail's reaper without waking it; the sidecar wakes the
// reaper after its requests, and the reaper, which then has a child,
// waits for it in wait4 (no signal needed to reap its exit) instead of
// sleeping in ppoll until a SIGCHLD (jail.ReapOrphans). Read from the
// main thread's /proc syscall file.
func TestReaperWaitsForExecOrphans(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "orphanwait")
	st, err := readState(d.sandboxDir("orphanwait"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, ep, "sleep 600 </dev/null >/dev/null 2>&1 &")
	var nr int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if nr = mainThreadSyscall(t, st.PID); nr == unix.SYS_WAIT4 {
			return
		}
	}
	t.Errorf("the reaper is in system call %d 30 s after an exec left an orphan, want wait4 (%d); ppoll is %d",
		nr, unix.SYS_WAIT4, unix.SYS_PPOLL)
}

// mainThreadSyscall is the system call the main thread of process pid is
// in (-1: running).
func mainThreadSyscall(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || f[0] == "running" {
		return -1
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatalf("read %d's system call: %q", pid, b)
	}
	return nr
}

// childrenOf is the host pid and state of every process whose parent is
// pid, from /proc (a thread's children file lists only its own).
func childrenOf(t *testing.T, pid int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	kids := map[int]string{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		_, rest, ok := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); ok && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids[child] = f[0]
		}
	}
	return kids
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
// (jail.TrimThreads), and after its orphan reaper's wake. Takes about
// 3 s on a quiet host.
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
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if idle = taskCount(t, st.PID); idle <= 4 {
			break
		}
	}
	t.Logf("sidecar threads: %d after six concurrent execs, %d once idle", busy, idle)
	if idle > 4 {
		t.Errorf("an idle sidecar holds %d threads, want at most 4", idle)
	}
	// Each wake of the orphan reaper makes a spare thread, which the
	// sidecar ends from 100 ms later (retrying, backed off to 25 s in all,
	// while a trim gains nothing: on a loaded host the first ones can).
	wakeReaper(t, st.PID)
	time.Sleep(300 * time.Millisecond)
	later := taskCount(t, st.PID)
	for deadline := time.Now().Add(30 * time.Second); later > 4 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
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

// TestExecOOMScore: every exec's command is the OOM killer's first pick
// (oom_score_adj 1000) and the sidecar stays at 0, whether the command
// runs directly or through /bin/sh. The score was written by the sidecar
// after the start, which the kernel refused (EACCES) for some of the
// execs once the command's execve had made /proc/PID/ the sandbox user's
// (bench/issue27/session10-exec10.md); the spawned child now sets its
// own before it drops its ids.
func TestExecOOMScore(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	ep := create(t, d, "oom")
	st, err := readState(d.sandboxDir("oom"))
	if err != nil {
		t.Fatal(err)
	}
	c := unixClient(ep.Address)
	for i := range 40 {
		command := "cat /proc/self/oom_score_adj" // direct: cat is spawned
		if i%2 == 1 {
			command += "; true" // through /bin/sh, which cat inherits from
		}
		if res := runWith(t, c, ep, command); res.Stdout != "1000\n" || res.ExitCode != 0 {
			t.Fatalf("exec %d %q: exit %d, stdout %q, stderr %q; want 1000", i, command, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	own, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", st.PID))
	if err != nil {
		t.Fatal(err)
	}
	if string(own) != "0\n" {
		t.Errorf("the sidecar's oom_score_adj = %q, want 0", own)
	}
}
