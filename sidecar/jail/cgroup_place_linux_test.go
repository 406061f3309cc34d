package jail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
// Session 24's proposal moved the forking thread itself into the
// sandbox's v1 cgroups ("0" to each tasks file: pid 0, one thread, no
// global lock), forked there (a cgroup2 hierarchy through clone3's
// CLONE_INTO_CGROUP, which takes no write lock either), and moved the
// thread back. placeByThread is that design as a prototype for the
// benchmark and its test; it was not built. What forkJail does instead
// (session 25, cgroup_place_linux.go): the child moves itself, and
// clone3 places it in the cgroup2 hierarchy.

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
// fork and then Cgroup.Add; thread, placeByThread; and with a jail's clone
// (forkJail, the namespaces of a prepared slot's jail: no new network
// namespace), jail, forkJail and then Cgroup.Add (the driver until
// session 25), and self, forkJail placing the child itself
// (openCgroupPlace included). Metrics per placement: the pid writes to
// cgroup.procs (each takes the global write lock), the child's own moves
// ("0" to a tasks file: no threadgroup lock), the forking thread's
// voluntary context switches during its moves (getrusage RUSAGE_THREAD:
// a grace period waited for is one or more; self's thread makes none),
// the thread's CPU time and involuntary switches in the placement (fork
// included), and the child's CPU time, its cat's included (wait4).
// The cgroup's creation and removal are untimed.
func BenchmarkCgroupPlacement(b *testing.B) {
	c := realCgroups(b)
	jailAttr := sysProcAttr(Spec{HostIDBase: testBase})
	jailAttr.Cloneflags &^= unix.CLONE_NEWNET
	for _, mode := range []string{"old", "thread", "jail", "self"} {
		b.Run(mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var nvcsw, nivcsw, pidWrites, selfMoves, cpu, childCPU int64
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
				switch mode {
				case "old", "jail":
					if mode == "old" {
						pid, err = syscall.ForkExec("/bin/cat", []string{"cat"}, attr)
					} else {
						pid, err = forkJail(forkOptions{path: "/bin/cat", argv: []string{"cat"}, dir: "/", files: []int{int(r.Fd()), 2, 2}, attr: jailAttr, keep: SidecarCaps(false)})
					}
					if err == nil {
						_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
						err = cg.Add(pid)
						_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
						pidWrites += int64(len(cg.Dirs))
					}
				case "self":
					var place *cgroupPlace
					if place, err = openCgroupPlace(cg.Dirs); err == nil {
						pid, err = forkJail(forkOptions{path: "/bin/cat", argv: []string{"cat"}, dir: "/", files: []int{int(r.Fd()), 2, 2}, attr: jailAttr, keep: SidecarCaps(false), place: place})
						selfMoves += int64(len(place.write))
						place.close()
					}
				default:
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
				var cru unix.Rusage
				_, _ = unix.Wait4(pid, &ws, 0, &cru)
				childCPU += unix.TimevalToNsec(cru.Utime) + unix.TimevalToNsec(cru.Stime)
				if err := cg.Remove(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(pidWrites)/float64(b.N), "pid-writes/op")
			b.ReportMetric(float64(selfMoves)/float64(b.N), "self-moves/op")
			b.ReportMetric(float64(childCPU)/1e3/float64(b.N), "child-cpu-µs/op")
			b.ReportMetric(float64(nvcsw)/float64(b.N), "nvcsw/op")
			b.ReportMetric(float64(cpu)/1e3/float64(b.N), "thread-cpu-µs/op")
			b.ReportMetric(float64(nivcsw)/float64(b.N), "nivcsw/op")
		})
	}
}

// sandboxCgroups counts the lines of a /proc/PID/cgroup (cgroupPaths)
// that name the sandbox cgroup name.
func sandboxCgroups(paths map[string]string, name string) int {
	n := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "/"+cgroupParent+"/"+name) {
			n++
		}
	}
	return n
}

// withoutClone3 runs the test with clone3 taken as refused already (off),
// or refused by the kernel at the clone (refuse: a size over a page, which
// it rejects with E2BIG, as a kernel without CLONE_INTO_CGROUP answers
// its non-zero cgroup field), and restores
// both.
func withoutClone3(t *testing.T, off, refuse bool) {
	t.Helper()
	was, size := noClone3.Load(), cloneArgsSize
	noClone3.Store(off)
	if refuse {
		cloneArgsSize = 1 << 20
	}
	t.Cleanup(func() { noClone3.Store(was); cloneArgsSize = size })
}

// clone3Ways are the ways a jail's clone goes into its cgroup
// (withoutClone3): clone3 into the cgroup2 directory, clone3 taken as
// refused already, and clone3 refused by the kernel at the clone.
var clone3Ways = []struct {
	name            string
	noClone, refuse bool
}{
	{"clone3", false, false},
	{"without clone3", true, false},
	{"clone3 refused at the clone", false, true},
}

// TestStartOwnedPlaces: a jail's clone (startOwned: asOwner, forkJail)
// starts the jail in every directory of its cgroup before it runs
// anything: the binary it executes reads, as its first act, its own
// /proc/self/cgroup naming the sandbox's cgroup in every hierarchy, and a
// pids limit of 1 holds from its first fork. None of its descriptors is
// a cgroup's file (they are close-on-exec). Both ways: clone3 into
// the cgroup2 directory, and the fallback without clone3 (the child writes
// "0" to cgroup.procs); the first must not have fallen back.
func TestStartOwnedPlaces(t *testing.T) {
	c := realCgroups(t)
	for i, tt := range clone3Ways {
		t.Run(tt.name, func(t *testing.T) {
			withoutClone3(t, tt.noClone, tt.refuse)
			name := fmt.Sprintf("jailtest.selfplace.%d.%d", os.Getpid(), i)
			cg, err := c.Create(name, Limits{Pids: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cg.Remove(context.Background()) })
			spec := Spec{HostIDBase: testBase, CgroupDirs: cg.Dirs}
			// cat, exec'd directly, reads its cgroups, then blocks on stdin.
			// /proc/self is the host's procfs, and /proc/self/cgroup shows
			// the host's paths: a new cgroup namespace would be rooted at the
			// parent's v1 cgroups and, with CLONE_INTO_CGROUP, the sandbox's
			// cgroup2 one (Setup's own unshare roots the jail's at its
			// cgroups in all).
			const clear = unix.CLONE_NEWPID | unix.CLONE_NEWCGROUP
			out, pid, finish := startOwnedCmd(t, spec, clear, "/bin/cat", "/proc/self/cgroup", "-")
			fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range fds {
				target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
				if err == nil && strings.Contains(target, "/"+cgroupParent+"/"+name) {
					t.Errorf("the jail holds fd %s: %s", e.Name(), target)
				}
			}
			if err := finish(); err != nil {
				t.Fatal(err)
			}
			paths := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if parts := strings.SplitN(line, ":", 3); len(parts) == 3 {
					paths[parts[0]+":"+parts[1]] = parts[2]
				}
			}
			if n := sandboxCgroups(paths, name); n != len(cg.Dirs) {
				t.Errorf("the jail's first read of /proc/self/cgroup names the sandbox's in %d hierarchies, want %d:\n%s", n, len(cg.Dirs), out.String())
			}

			// pids.max 1: the shell's fork for true is refused.
			out, _, finish = startOwnedCmd(t, spec, clear, "/bin/sh", "-c", "/bin/true; echo forked")
			err = finish()
			if err == nil || strings.Contains(out.String(), "forked") {
				t.Errorf("sh forked in a cgroup with pids.max 1: %v, %q", err, out.String())
			}
			if want := tt.noClone || tt.refuse; noClone3.Load() != want {
				t.Errorf("clone3 taken as refused: %v, want %v", noClone3.Load(), want)
			}
		})
	}
}

// TestStartOwnedCgroupNamespace: a jail that places itself (startOwned
// of a spec that is not a build's or a nested jail's) is born in a cgroup
// namespace rooted at its cgroup in every hierarchy (Launch.CgroupNS):
// the binary it executes reads, as its first act, "/" for each in its
// /proc/self/cgroup, whether its clone was clone3's into the cgroup2
// directory or not. A clone's own CLONE_NEWCGROUP is rooted at the
// caller's cgroups but for the cgroup2 one clone3 places it in, so
// without the child's unshare a hybrid host's v1 hierarchies, and every
// hierarchy without clone3, name paths above the jail's.
func TestStartOwnedCgroupNamespace(t *testing.T) {
	c := realCgroups(t)
	for i, tt := range clone3Ways {
		t.Run(tt.name, func(t *testing.T) {
			withoutClone3(t, tt.noClone, tt.refuse)
			cg, err := c.Create(fmt.Sprintf("jailtest.cgroupns.%d.%d", os.Getpid(), i), Limits{Pids: 16})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cg.Remove(context.Background()) })
			spec := Spec{HostIDBase: testBase, CgroupDirs: cg.Dirs}
			// /proc is the host's: /proc/self is cat's with no PID namespace.
			out, _, finish := startOwnedCmd(t, spec, unix.CLONE_NEWPID, "/bin/cat", "/proc/self/cgroup", "-")
			if err := finish(); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var above []string
			for _, line := range lines {
				if parts := strings.SplitN(line, ":", 3); len(parts) != 3 || parts[2] != "/" {
					above = append(above, line)
				}
			}
			if len(above) > 0 || len(lines) < len(cg.Dirs) {
				t.Errorf("the jail's first read of /proc/self/cgroup names paths other than its namespace's root %q:\n%s", above, out.String())
			}
		})
	}
}

// startOwnedCmd starts argv with startOwned as spec's jail, without the
// clone flags in clear (its stdin a pipe kept open, its stdout and stderr
// one pipe: files, as Start asks), and returns its output's buffer, its
// pid, and a finish that closes its stdin and waits for it and its output.
func startOwnedCmd(t *testing.T, spec Spec, clear uintptr, argv ...string) (*strings.Builder, int, func() error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, outW, outW
	cmd.SysProcAttr = sysProcAttr(spec)
	cmd.SysProcAttr.Cloneflags &^= clear
	err = startOwned(cmd, spec)
	stdinR.Close()
	outW.Close()
	if err != nil {
		stdin.Close()
		outR.Close()
		t.Fatal(err)
	}
	out := &strings.Builder{}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, outR)
		close(done)
	}()
	return out, cmd.Process.Pid, func() error {
		stdin.Close()
		<-done
		outR.Close()
		return cmd.Wait()
	}
}

// TestForkJailPlacementFails: a cgroup directory removed before the
// start fails it before any clone; one removed between the opening of
// its descriptors and the clone fails the clone (clone3: the cgroup2
// directory) or the child's first step (a v1 tasks file), with an error
// that says so, the child reaped and no descriptor left open.
func TestForkJailPlacementFails(t *testing.T) {
	c := realCgroups(t)
	spec := Spec{HostIDBase: testBase}
	name := fmt.Sprintf("jailtest.placefail.%d", os.Getpid())
	newCgroup := func(t *testing.T) Cgroup {
		cg, err := c.Create(name, Limits{Pids: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cg.Remove(context.Background()) })
		return cg
	}
	t.Run("removed before", func(t *testing.T) {
		cg := newCgroup(t)
		if err := unix.Rmdir(cg.Dirs[len(cg.Dirs)-1]); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = sysProcAttr(spec)
		spec := spec
		spec.CgroupDirs = cg.Dirs
		err := startOwned(cmd, spec)
		if err == nil || !strings.Contains(err.Error(), "place jail in cgroup "+cg.Dirs[len(cg.Dirs)-1]) || !errors.Is(err, unix.ENOENT) {
			t.Errorf("startOwned = %v, want a placement error with ENOENT", err)
		}
	})
	for i := range newCgroup(t).Dirs {
		t.Run(fmt.Sprintf("dir %d removed after opening", i), func(t *testing.T) {
			cg := newCgroup(t)
			before := fdCount(t)
			place, err := openCgroupPlace(cg.Dirs)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Rmdir(cg.Dirs[i]); err != nil {
				t.Fatal(err)
			}
			_, err = forkJail(forkOptions{path: "/bin/true", argv: []string{"true"}, dir: "/", files: []int{0, 1, 2}, attr: sysProcAttr(spec), keep: SidecarCaps(false), place: place})
			place.close()
			// A dead cgroup: ENODEV from its tasks file, ENOENT from clone3.
			if err == nil || !strings.HasPrefix(err.Error(), "place jail in cgroup: ") || !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
				t.Errorf("forkJail = %v, want a placement error with ENODEV or ENOENT", err)
			}
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
				t.Errorf("wait4(-1) = %v, want ECHILD: a child was left", err)
			}
			if n := fdCount(t); n != before {
				t.Errorf("%d descriptors open, %d before", n, before)
			}
		})
	}
}

// TestClone3Refused: only the answers of a kernel or filter without
// clone3's CLONE_INTO_CGROUP turn clone3 off for the process; an EINVAL
// with a real descriptor, or any other error, is one clone's failure.
func TestClone3Refused(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		fd    uint64
		want  bool
	}{
		{unix.ENOSYS, 7, true},
		{unix.E2BIG, 7, true},
		{unix.EINVAL, 0, true},
		{unix.EINVAL, 7, false},
		{unix.EPERM, 7, false},
		{unix.EACCES, 7, false},
		{unix.EBADF, 7, false},
		{unix.EBUSY, 7, false},
		{unix.ENOSPC, 0, false},
		{unix.EOPNOTSUPP, 7, false},
	}
	for _, tt := range tests {
		if got := clone3Refused(tt.errno, tt.fd); got != tt.want {
			t.Errorf("clone3Refused(%v, fd %d) = %v, want %v", tt.errno, tt.fd, got, tt.want)
		}
		if got := clone3Refused(fmt.Errorf("clone: %w", tt.errno), tt.fd); got != tt.want {
			t.Errorf("clone3Refused(wrapped %v, fd %d) = %v, want %v", tt.errno, tt.fd, got, tt.want)
		}
	}
}

// TestClone3Args: clone3 gets clone's flags without the exit signal, and
// the exit signal apart, but none with CLONE_PARENT (a Spawner's jail),
// which clone3 refuses with EINVAL and clone ignores.
func TestClone3Args(t *testing.T) {
	const ns = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS
	tests := []struct {
		name  string
		flags uintptr
		want  cloneArgs
	}{
		{"own child", ns | uintptr(unix.SIGCHLD), cloneArgs{flags: ns | unix.CLONE_INTO_CGROUP, exitSignal: uint64(unix.SIGCHLD), cgroup: 9}},
		{"our parent's child", ns | unix.CLONE_PARENT | uintptr(unix.SIGCHLD), cloneArgs{flags: ns | unix.CLONE_PARENT | unix.CLONE_INTO_CGROUP, cgroup: 9}},
	}
	for _, tt := range tests {
		if got := clone3Args(tt.flags, 9); got != tt.want {
			t.Errorf("%s: clone3Args(%#x, 9) = %+v, want %+v", tt.name, tt.flags, got, tt.want)
		}
	}
}

// TestCloneParentPlacesByClone3: a Spawner's jail is cloned with
// CLONE_PARENT, which clone3 refuses with an exit signal (EINVAL), and a
// refused clone3 falls back to the child's write of its pid to
// cgroup.procs: the global lock again. The jail's clone (forkJail) with
// CLONE_PARENT and a new cgroup namespace must be clone3's: only then is
// the clone's namespace rooted at the sandbox's cgroup2 directory ("0::/"
// in the jail's first read of /proc/self/cgroup; the kernel roots it at
// the child's cgroups after the fork, cgroup_post_fork); after the
// fallback's write it names the sandbox's directory below the parent's.
// The clone runs in a child process of the test (CLONE_PARENT makes the
// jail the test's own child, reaped here).
func TestCloneParentPlacesByClone3(t *testing.T) {
	if out := os.Getenv("BOXKITE_TEST_CLONE_PARENT"); out != "" {
		spec := Spec{HostIDBase: testBase, CgroupDirs: strings.Split(os.Getenv("BOXKITE_TEST_CLONE_PARENT_DIRS"), ",")}
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		attr := sysProcAttr(spec)
		attr.Cloneflags &^= unix.CLONE_NEWPID
		attr.Cloneflags |= unix.CLONE_PARENT
		place, err := openCgroupPlace(spec.CgroupDirs)
		if err != nil {
			t.Fatal(err)
		}
		defer place.close()
		// The clone's own cgroup namespace (no cgroupNS): a child's
		// unshare would root it at the sandbox's cgroup either way.
		pid, err := forkJail(forkOptions{
			path: "/bin/cat", argv: []string{"cat", "/proc/self/cgroup"}, dir: "/",
			files: []int{0, int(f.Fd()), int(f.Fd())}, attr: attr, keep: SidecarCaps(false), place: place,
		})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("jail pid %d\n", pid)
		return
	}
	c := realCgroups(t)
	name := fmt.Sprintf("jailtest.cloneparent.%d", os.Getpid())
	cg, err := c.Create(name, Limits{Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Remove(context.Background()) })
	out := filepath.Join(t.TempDir(), "cgroup")
	if err := os.Chmod(filepath.Dir(out), 0o777); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestCloneParentPlacesByClone3$", "-test.v")
	helper.Env = append(os.Environ(), "BOXKITE_TEST_CLONE_PARENT="+out, "BOXKITE_TEST_CLONE_PARENT_DIRS="+strings.Join(cg.Dirs, ","))
	report, err := helper.CombinedOutput()
	if err != nil {
		t.Fatalf("clone helper: %v\n%s", err, report)
	}
	var pid int
	for _, line := range strings.Split(string(report), "\n") {
		if _, err := fmt.Sscanf(line, "jail pid %d", &pid); err == nil {
			break
		}
	}
	if pid == 0 {
		t.Fatalf("clone helper named no jail:\n%s", report)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatalf("reap the jail %d (CLONE_PARENT: the test's child): %v", pid, err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("the jail ended %v", ws)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n0::/\n") && !strings.HasPrefix(string(b), "0::/\n") {
		t.Errorf("the jail's cgroup namespace is not rooted at its cgroup2 directory (clone3 not taken):\n%s", b)
	}
}
