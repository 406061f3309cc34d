//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestSpawner: as root, jails are cloned by the spawner's helper process
// (jail.Spawner), yet each is this process's child, as if it had cloned
// it: Delete reaps it (a jail left the helper's child would stay a
// zombie). Jails started at once hold no descriptor of one another's nor
// the helper's socket, and a helper that died is started again by the
// next create.
func TestSpawner(t *testing.T) {
	needSpawnerRoot(t)
	t.Parallel()
	d := newDriver(t)
	ctx := context.Background()
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = d.Create(ctx, model.Spec{ID: fmt.Sprintf("s%d", i)}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	helper := d.spawner.PID()
	if helper == 0 {
		t.Fatal("no spawner helper runs")
	}
	helperSock, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", helper))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			t.Fatal(err)
		}
		if pp := parentPID(t, st.PID); pp != os.Getpid() {
			t.Errorf("%s: the jail's parent is %d, not this process (%d)", id, pp, os.Getpid())
		}
		for _, target := range fdTargets(t, st.PID) {
			other := strings.HasPrefix(target, d.sandboxesDir()+"/") && !strings.HasPrefix(target, d.sandboxDir(id)+"/")
			if other || target == helperSock {
				t.Errorf("%s: the jail's init holds %s", id, target)
			}
		}
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", st.PID)); err == nil {
			t.Errorf("%s: jail %d not reaped after Delete", id, st.PID)
		}
	}

	// A helper that died is replaced.
	if err := syscall.Kill(helper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for st := procState(helper); st != "" && st != "Z"; st = procState(helper) {
		time.Sleep(10 * time.Millisecond)
	}
	ep := create(t, d, "after")
	if res := run(t, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("exec after the helper's restart: %+v", res)
	}
	if again := d.spawner.PID(); again == 0 || again == helper {
		t.Errorf("helper %d died; now %d runs", helper, again)
	}
}

// TestSpawnerPassesNoStrayDescriptor: a descriptor the server inherited
// without close-on-exec (a pipe left open by whatever started it) went to
// the spawner's helper and from it into every jail's init, a host file in
// the hands of the sandbox's root. Not parallel: the stray descriptor
// would reach other tests' children too.
func TestSpawnerPassesNoStrayDescriptor(t *testing.T) {
	needSpawnerRoot(t)
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "stray-r"), os.NewFile(uintptr(p[1]), "stray-w")
	defer r.Close()
	defer w.Close()
	// Its copy without close-on-exec, numbered high as a stray usually is
	// (past the descriptors a jail's clone places from 0 up).
	fd, err := unix.FcntlInt(w.Fd(), unix.F_DUPFD, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stray, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(t) // its helper starts at the first create, inheriting w
	st := create(t, d, "stray")
	if res := run(t, st, "true"); res.ExitCode != 0 {
		t.Fatalf("exec: %+v", res)
	}
	state, err := readState(d.sandboxDir("stray"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range fdTargets(t, state.PID) {
		if target == stray {
			t.Errorf("the jail's init holds the server's stray descriptor %s", stray)
		}
	}
}

// TestSpawnerHelperDiesWithRequest: a create whose request the helper
// took but never answered (it died: killed as it read it, or a dying
// helper whose socket still queued it) is retried on a new helper, not
// failed with the end of the answer's pipe. The first helper here reads
// one request and exits; the next is the sidecar.
func TestSpawnerHelperDiesWithRequest(t *testing.T) {
	needSpawnerRoot(t)
	t.Parallel()
	d := newDriver(t)
	// New starts its helper in the background, reading d.spawner: swap it
	// only once that helper runs (PID's lock orders the two).
	for deadline := time.Now().Add(time.Minute); d.spawner.PID() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the driver's spawner helper never started")
		}
	}
	if err := d.spawner.Close(); err != nil {
		t.Fatal(err)
	}
	dying := filepath.Join(t.TempDir(), "spawner")
	script := fmt.Sprintf("#!/bin/sh\nif mkdir \"$0.once\" 2>/dev/null; then exec /usr/bin/head -c1 <&3 >/dev/null; fi\nexec %s \"$@\"\n", sidecarBin)
	if err := os.WriteFile(dying, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	d.spawner = jail.NewSpawner(dying)
	ep := create(t, d, "retried")
	if _, err := os.Stat(dying + ".once"); err != nil {
		t.Fatalf("the dying helper never ran: %v", err)
	}
	if res := run(t, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("exec in the jail the second helper started: %+v", res)
	}
}

func parentPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	pp, err := strconv.Atoi(f[1]) // field 4
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// procState is the state letter of pid, "" once it is gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))[0]
}

func fdTargets(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, target)
		}
	}
	return out
}

// TestSpawnerMountNamespace: the spawner's helper clones jails from a
// private mount namespace trimmed to what they reach by path (issue 27:
// a jail's clone copies its parent's every mount, and its pivot_root
// detaches them again). Neither a mount of the host made before the helper
// started (another sandbox's disk) nor one made after reaches it, and it
// keeps /proc, /dev and the way to its binary, so jails still start.
func TestSpawnerMountNamespace(t *testing.T) {
	needSpawnerRoot(t)
	t.Parallel()
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	mountTmpfs(t, before)
	d := newDriver(t)
	for deadline := time.Now().Add(time.Minute); d.spawner.PID() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the driver's spawner helper never started")
		}
	}
	mountTmpfs(t, after)
	ep := create(t, d, "trimmed")
	if res := run(t, ep, "true"); res.ExitCode != 0 {
		t.Fatalf("exec in a jail the helper cloned: %+v", res)
	}
	points := mountPointsOf(t, d.spawner.PID())
	for _, p := range []string{before, after} {
		if slices.Contains(points, p) {
			t.Errorf("the spawner's helper holds the host's mount %s; its mounts: %q", p, points)
		}
	}
	host := mountPointsOf(t, os.Getpid())
	for _, p := range []string{"/", "/proc", "/dev"} {
		if slices.Contains(host, p) && !slices.Contains(points, p) {
			t.Errorf("the spawner's helper lost %s; its mounts: %q", p, points)
		}
	}
	if len(points) >= len(host) {
		t.Errorf("the spawner's helper has %d mounts, the host %d", len(points), len(host))
	}
}

func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// mountPointsOf lists the mount points of pid's mount namespace.
func mountPointsOf(t *testing.T, pid int) []string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(raw)) {
		if f := strings.Fields(line); len(f) > 4 {
			out = append(out, unescapeMount(f[4]))
		}
	}
	return out
}

// TestSpawnerWaitsOnPoller: the idle spawner's helper waits for requests
// on the runtime's poller, not in a recvmsg on its socket. A blocked
// recvmsg holds the helper's one P in a system call, which sysmon retakes
// and hands to another thread, for every request (issue 27; BENCHMARKS.md
// session 28). Read from each thread's /proc/PID/task/TID/syscall once
// the helper has served a create and settled: every thread asleep in a
// system call.
func TestSpawnerWaitsOnPoller(t *testing.T) {
	needSpawnerRoot(t)
	t.Parallel()
	d := newDriver(t)
	ctx := context.Background()
	if _, err := d.Create(ctx, model.Spec{ID: "poller"}); err != nil {
		t.Fatal(err)
	}
	helper := d.spawner.PID()
	if helper == 0 {
		t.Fatal("no spawner helper runs")
	}
	// Settled: three readings in a row with every thread in a system call
	// and one of them waiting for the socket, in recvmsg or the poller's
	// epoll_pwait.
	settled := 0
	var calls map[int]int
	for deadline := time.Now().Add(time.Minute); settled < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the helper never settled: system calls by thread %v (-1: running)", calls)
		}
		calls = threadSyscalls(t, helper)
		waiting, busy := false, false
		for _, nr := range calls {
			switch nr {
			case -1:
				busy = true
			case unix.SYS_RECVMSG, unix.SYS_EPOLL_PWAIT:
				waiting = true
			}
		}
		if waiting && !busy {
			settled++
		} else {
			settled = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	for tid, nr := range calls {
		if nr == unix.SYS_RECVMSG {
			t.Errorf("helper thread %d waits in recvmsg, not on the poller (system calls by thread: %v)", tid, calls)
		}
	}
}

// threadSyscalls returns the system call each thread of pid is in, by
// thread id, from /proc/PID/task/TID/syscall: its number, or -1 for a
// thread running (or between calls).
func threadSyscalls(tb testing.TB, pid int) map[int]int {
	tb.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	calls := make(map[int]int, len(tasks))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "syscall"))
		if err != nil {
			continue // ended meanwhile
		}
		f := strings.Fields(string(b))
		nr, err := strconv.Atoi(f[0])
		if err != nil {
			nr = -1 // "running", or "-1 ..." for a thread between calls
		}
		calls[tid] = nr
	}
	return calls
}

// needSpawnerRoot fails the test without root under CI, which has it,
// and skips it elsewhere: only root starts the spawner's helper.
func needSpawnerRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the spawner needs root, as CI has")
		}
		t.Skip("the spawner needs root")
	}
}
