package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestForkJail holds forkJail to syscall.ForkExec's properties for a
// jail's clone, and to the one it adds. The child (a shell) reports:
// its bounding set (only SidecarCaps: the drops before the execve), its
// permitted set (all: kept through the inheritable set, which Setup
// needs), its id maps (the handshake: written before it went on), its
// ids (0 inside), its session (its own), its cwd, and its descriptors
// (fd 3 passed, nothing else beyond the standard ones). A child that
// fails (no binary, a refused id map) comes back as its errno, reaped,
// and no descriptor of forkJail's is left open.
func TestForkJail(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a jail's clone needs root")
	}
	spec := Spec{ID: "fork", HostIDBase: 7 * IDRange}
	keep := SidecarCaps(false)
	fullBefore := fdCount(t)
	inherited := inheritedFDs(t)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	extra, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	script := `grep -E '^(CapBnd|CapPrm|CapInh|Uid|Gid|NoNewPrivs):' /proc/self/status | tr -s '\t' ' '
cat /proc/self/uid_map /proc/self/gid_map | awk '{print $1, $2, $3}'
cat /proc/self/setgroups
echo sid $(cut -d' ' -f6 /proc/$$/stat) pid $$
echo cwd $(pwd)
ls /proc/self/fd | sort -n | tr '\n' ' '; echo`
	attr := sysProcAttr(spec)
	attr.Cloneflags &^= unix.CLONE_NEWPID // /proc/self/stat's pid then is the host's, as the session's
	pid, err := forkJail(forkOptions{
		path: "/bin/sh", argv: []string{"sh", "-c", script}, env: []string{"PATH=/usr/bin:/bin"}, dir: "/",
		files: []int{int(extra.Fd()), int(w.Fd()), 2, int(extra.Fd())}, attr: attr, keep: keep,
	})
	w.Close()
	extra.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	out := string(b)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("wait = %v, %v; output %s", ws, err, out)
	}
	all, err := capAll()
	if err != nil {
		t.Fatal(err)
	}
	mask := capMask(keep)
	base := spec.HostIDBase
	want := fmt.Sprintf(`Uid: 0 0 0 0
Gid: 0 0 0 0
CapInh: %016x
CapPrm: %016x
CapBnd: %016x
NoNewPrivs: 1
0 %d %d
0 %d %d
allow
sid %d pid %d
cwd /
0 1 2 3 4 %s
`, all, all, uint64(mask[1])<<32|uint64(mask[0]), base, IDRange, base, IDRange, pid, pid, inherited)
	// ls's own directory descriptor is 4 (3 is the extra); inherited
	// are the test's own without close-on-exec (its runner's).
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("the child reports (-want +got):\n%s", diff)
	}

	t.Run("missing binary", func(t *testing.T) {
		_, err := forkJail(forkOptions{path: "/nonexistent", argv: []string{"x"}, dir: "/", files: []int{0, 1, 2}, attr: sysProcAttr(spec), keep: keep})
		if !errors.Is(err, unix.ENOENT) {
			t.Errorf("forkJail = %v, want ENOENT", err)
		}
	})
	t.Run("refused id map", func(t *testing.T) {
		bad := sysProcAttr(spec)
		bad.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: 0}}
		_, err := forkJail(forkOptions{path: "/bin/true", argv: []string{"true"}, dir: "/", files: []int{0, 1, 2}, attr: bad, keep: keep})
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("forkJail = %v, want EINVAL", err)
		}
	})
	t.Run("more than a jail's attr", func(t *testing.T) {
		more := sysProcAttr(spec)
		more.Pdeathsig = syscall.SIGKILL
		if _, err := forkJail(forkOptions{path: "/bin/true", argv: []string{"true"}, dir: "/", files: []int{0, 1, 2}, attr: more, keep: keep}); err == nil {
			t.Error("forkJail took a Pdeathsig it does not set")
		}
	})
	// The failed children were reaped: no child is left, zombie or not.
	if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.ECHILD) {
		t.Errorf("wait4(-1) = %v, want ECHILD: a child was left", err)
	}
	if n := fdCount(t); n != fullBefore {
		t.Errorf("%d descriptors open, %d before", n, fullBefore)
	}
}

// TestCheckBoundingSet: LockdownProcess refuses a bounding set holding
// more than the sidecar keeps (this test's, root's full set), and a
// process without no_new_privs, before any all-thread call; and takes a
// bounding set with no more (a locked thread that dropped the rest,
// ended after).
func TestCheckBoundingSet(t *testing.T) {
	keep := SidecarCaps(false)
	if err := checkBoundingSet(keep); !errors.Is(err, ErrBoundingSet) {
		if os.Geteuid() == 0 {
			t.Errorf("checkBoundingSet with root's full set = %v, want ErrBoundingSet", err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("dropping from the bounding set needs root")
	}
	// LockdownProcess's caps step refuses before any all-thread call.
	var calls int
	on := allThreads{func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
		calls++
		return 0, 0, 0
	}}
	if err := dropCaps(keep, on); !errors.Is(err, ErrBoundingSet) || calls != 0 {
		t.Errorf("dropCaps on every thread with a full bounding set = %v after %d all-thread calls, want ErrBoundingSet after none", err, calls)
	}
	// And its no_new_privs step (the test runs without it).
	if err := (allThreads{func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
		calls++
		return 0, 0, 0
	}}).noNewPrivs(); !errors.Is(err, ErrNoNewPrivs) || calls != 0 {
		t.Errorf("noNewPrivs on every thread without it = %v after %d all-thread calls, want ErrNoNewPrivs after none", err, calls)
	}
	done := make(chan error)
	var traps []uintptr
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := (threadCalls{}).boundingSet(keep); err != nil {
			done <- err
			return
		}
		if err := checkBoundingSet(keep); err != nil {
			done <- err
			return
		}
		// With the bounding set right, the caps step makes one
		// all-thread call, the capset (which also empties ambient).
		done <- dropCaps(keep, allThreads{func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
			traps = append(traps, trap)
			return 0, 0, 0
		}})
	}()
	if err := <-done; err != nil {
		t.Errorf("checkBoundingSet or dropCaps after the drops = %v", err)
	}
	if want := []uintptr{unix.SYS_CAPSET}; !slices.Equal(traps, want) {
		t.Errorf("dropCaps made all-thread calls %v, want only capset %v", traps, want)
	}
}

// capAll is the full capability set of this kernel.
func capAll() (uint64, error) {
	drops, err := boundingDrops(nil)
	if err != nil {
		return 0, err
	}
	return uint64(1)<<len(drops) - 1, nil
}

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// inheritedFDs lists this process's descriptors above 4 without
// close-on-exec, which any child inherits, each followed by a space.
func inheritedFDs(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 4 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	var b strings.Builder
	for _, fd := range fds {
		fmt.Fprintf(&b, "%d ", fd)
	}
	return b.String()
}
