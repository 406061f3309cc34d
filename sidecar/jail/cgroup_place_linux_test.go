package jail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The cgroup placement of issue 27 (bench/issue27/session24-cgmove.md):
// today a jail is forked, then its pid is written to cgroup.procs of each
// hierarchy (Cgroup.Add), and each such write takes the kernel's global
// cgroup_threadgroup_rwsem for writing, an RCU grace period when no other
// writer came within one (cgroup_procs_write_start: pid || threadgroup).
// The proposed placement moves the forking thread itself into the
// sandbox's v1 cgroups ("0" to each tasks file: pid 0, one thread, no
// global lock), forks there (a cgroup2 hierarchy through clone3's
// CLONE_INTO_CGROUP, which takes no write lock either), and moves the
// thread back. placeByThread is that design as a prototype for the
// benchmark and its test; forkJail does not use it (yet).

// placeByThread forks argv[0] on the calling goroutine's locked thread
// with the child in every directory of cg from its first instruction.
// When the thread cannot return to its own cgroups it is left locked, so
// it ends with its goroutine (stuck reports that).
// moves, when not nil, gets the thread's voluntary context switches
// during its cgroup moves (not the fork's).
func placeByThread(cg Cgroup, argv []string, attr *syscall.ProcAttr, moves *int64) (pid int, stuck bool, err error) {
	runtime.LockOSThread()
	var v1, back []string
	sys := &syscall.SysProcAttr{}
	if attr.Sys != nil {
		*sys = *attr.Sys
	}
	for _, dir := range cg.Dirs {
		if _, err := os.Stat(filepath.Join(dir, "tasks")); err == nil {
			v1 = append(v1, dir)
			// dir is <own>/boxkite/<name> (Create): the thread's own is <own>.
			back = append(back, filepath.Dir(filepath.Dir(dir)))
			continue
		}
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			return 0, false, fmt.Errorf("open cgroup: %w", err)
		}
		defer unix.Close(fd)
		sys.UseCgroupFD, sys.CgroupFD = true, fd
	}
	var ru0, ru1, ru2, ru3 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	moved := 0
	for _, dir := range v1 {
		if err = writeCgroupFile(dir, "tasks", "0"); err != nil {
			break
		}
		moved++
	}
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	if err == nil {
		a := *attr
		a.Sys = sys
		pid, err = syscall.ForkExec(argv[0], argv, &a)
	}
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru2)
	for i := range moved {
		if berr := writeCgroupFile(back[i], "tasks", "0"); berr != nil {
			if pid > 0 {
				_ = unix.Kill(pid, unix.SIGKILL)
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, 0, nil)
			}
			return 0, true, errors.Join(err, fmt.Errorf("move thread back: %w", berr))
		}
	}
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru3)
	if moves != nil {
		*moves += ru1.Nvcsw - ru0.Nvcsw + ru3.Nvcsw - ru2.Nvcsw
	}
	runtime.UnlockOSThread()
	return pid, false, err
}

// cgroupPaths is /proc/<who>/cgroup as hierarchy line → path.
func cgroupPaths(t testing.TB, who string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + who + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			m[parts[0]+":"+parts[1]] = parts[2]
		}
	}
	return m
}

// TestPlaceByThread: the child is in every sandbox cgroup (cgroup2's
// killDir through CLONE_INTO_CGROUP on this hybrid host) while still
// blocked before its exec, and the forking thread is back in its own
// cgroups after a fork and after a failed one.
func TestPlaceByThread(t *testing.T) {
	c := realCgroups(t)
	name := "jailtest.place." + strconv.Itoa(os.Getpid())
	cg, err := c.Create(name, Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Remove(context.Background()) })

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := cgroupPaths(t, "thread-self")

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// cat blocks on its stdin until w closes: it runs nothing of ours.
	pid, stuck, err := placeByThread(cg, []string{"/bin/cat"}, &syscall.ProcAttr{Files: []uintptr{r.Fd(), 2, 2}}, nil)
	if err != nil || stuck {
		t.Fatalf("placeByThread: %v (stuck %v)", err, stuck)
	}
	got := cgroupPaths(t, strconv.Itoa(pid))
	_ = w.Close()
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, 0, nil)
	want := 0
	for _, path := range got {
		if strings.HasSuffix(path, "/"+cgroupParent+"/"+name) {
			want++
			continue
		}
	}
	if want != len(cg.Dirs) {
		t.Errorf("child in %d sandbox cgroups, want %d (%v); /proc/%d/cgroup: %v", want, len(cg.Dirs), cg.Dirs, pid, got)
	}
	if after := cgroupPaths(t, "thread-self"); !mapsEqual(before, after) {
		t.Errorf("thread's cgroups after the fork: %v, want %v", after, before)
	}

	_, stuck, err = placeByThread(cg, []string{"/nonexistent/cat"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}, nil)
	if err == nil || stuck {
		t.Fatalf("placeByThread of a missing binary: %v (stuck %v), want an error", err, stuck)
	}
	if after := cgroupPaths(t, "thread-self"); !mapsEqual(before, after) {
		t.Errorf("thread's cgroups after a failed fork: %v, want %v", after, before)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// BenchmarkCgroupPlacement places one forked child (cat, blocked on its
// stdin) into a sandbox cgroup in every hierarchy of this host: old, the
// fork and then Cgroup.Add; thread, placeByThread. Metrics per placement:
// the pid writes to cgroup.procs (each takes the global write lock) and
// the forking thread's voluntary context switches during the moves
// (getrusage RUSAGE_THREAD: a grace period waited for is one or more),
// and the thread's CPU time and involuntary switches in the placement
// (fork included).
// The cgroup's creation and removal are untimed.
func BenchmarkCgroupPlacement(b *testing.B) {
	c := realCgroups(b)
	for _, mode := range []string{"old", "thread"} {
		b.Run(mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var nvcsw, nivcsw, pidWrites, cpu int64
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				cg, err := c.Create(fmt.Sprintf("jailbench.place.%d.%d", os.Getpid(), i), Limits{Pids: 16})
				if err != nil {
					b.Fatal(err)
				}
				r, w, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				attr := &syscall.ProcAttr{Files: []uintptr{r.Fd(), 2, 2}}
				var pid int
				var ru0, ru1, c0, c1 unix.Rusage
				_ = unix.Getrusage(unix.RUSAGE_THREAD, &c0)
				b.StartTimer()
				if mode == "old" {
					pid, err = syscall.ForkExec("/bin/cat", []string{"cat"}, attr)
					if err == nil {
						_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
						err = cg.Add(pid)
						_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
						pidWrites += int64(len(cg.Dirs))
					}
				} else {
					var stuck bool
					var moves int64
					pid, stuck, err = placeByThread(cg, []string{"/bin/cat"}, attr, &moves)
					ru1.Nvcsw = moves
					if stuck {
						b.Fatal("thread stuck in the sandbox's cgroups")
					}
				}
				b.StopTimer()
				_ = unix.Getrusage(unix.RUSAGE_THREAD, &c1)
				if err != nil {
					b.Fatal(err)
				}
				nvcsw += ru1.Nvcsw - ru0.Nvcsw
				nivcsw += c1.Nivcsw - c0.Nivcsw
				cpu += unix.TimevalToNsec(c1.Utime) + unix.TimevalToNsec(c1.Stime) - unix.TimevalToNsec(c0.Utime) - unix.TimevalToNsec(c0.Stime)
				_ = r.Close()
				_ = w.Close()
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, 0, nil)
				if err := cg.Remove(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(pidWrites)/float64(b.N), "pid-writes/op")
			b.ReportMetric(float64(nvcsw)/float64(b.N), "nvcsw/op")
			b.ReportMetric(float64(cpu)/1e3/float64(b.N), "thread-cpu-µs/op")
			b.ReportMetric(float64(nivcsw)/float64(b.N), "nivcsw/op")
		})
	}
}
