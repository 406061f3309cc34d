package securitytest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// The test's main goroutine keeps the main thread: inJailMountNS's threads
// leave this process's mount namespace and must end, which the main
// thread cannot.
func init() { runtime.LockOSThread() }

// The local driver's jails are cloned from the spawner's skeleton root and
// switch to their own root with MS_MOVE and chroot, which leaves the
// skeleton beneath it (sidecar/jail/skeleton_linux.go). These tests prove
// that what lies beneath is the skeleton alone: read-only, what every jail
// binds anyway, no host path, no process.

// skeletonNames are the names the skeleton's root may hold: the system
// binds, /dev, /proc, the stage and the marker.
func skeletonNames() []string {
	names := []string{"dev", "proc", "tmp", ".boxkite-skeleton"}
	for _, p := range jail.DefaultSystemBinds() {
		names = append(names, strings.TrimPrefix(p, "/"))
	}
	return names
}

// A mountLine is one line of a mountinfo file.
type mountLine struct {
	id, parent int
	dev        string // major:minor
	root       string // the mount's root within its filesystem
	point      string
	opts       []string // per-mount options
	fstype     string
}

func parseMountinfo(t *testing.T, s string) []mountLine {
	t.Helper()
	var out []mountLine
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 7 || sep < 6 || sep+1 >= len(f) {
			t.Fatalf("mountinfo line %q", line)
		}
		id, err1 := strconv.Atoi(f[0])
		parent, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("mountinfo line %q", line)
		}
		out = append(out, mountLine{id: id, parent: parent, dev: f[2], root: unescape(f[3]), point: unescape(f[4]), opts: strings.Split(f[5], ","), fstype: f[sep+1]})
	}
	return out
}

func unescape(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// TestJailMountinfoShowsNoHost: a jail's /proc/self/mountinfo shows its
// own tree and nothing beneath: one mount at /, a tmpfs; every other
// mount's parent listed; and no bind of the host's root filesystem's /
// (what MS_MOVE over the host's namespace would leave).
func TestJailMountinfoShowsNoHost(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	res := x.run(id, "cat /proc/self/mountinfo")
	if res.ExitCode != 0 {
		t.Fatalf("cat mountinfo: exit %d: %s", res.ExitCode, res.Stderr)
	}
	lines := parseMountinfo(t, res.Stdout)
	var hostRoot unix.Stat_t
	if err := unix.Stat("/", &hostRoot); err != nil {
		t.Fatal(err)
	}
	hostDev := fmt.Sprintf("%d:%d", unix.Major(hostRoot.Dev), unix.Minor(hostRoot.Dev))
	ids := map[int]bool{}
	for _, m := range lines {
		ids[m.id] = true
	}
	var roots, orphans []mountLine
	for _, m := range lines {
		if m.point == "/" {
			roots = append(roots, m)
		}
		if !ids[m.parent] {
			orphans = append(orphans, m)
		}
		if m.dev == hostDev && m.root == "/" {
			t.Errorf("the jail lists the host's root filesystem whole at %s: %+v", m.point, m)
		}
	}
	if len(roots) != 1 || roots[0].fstype != "tmpfs" || !slices.Contains(roots[0].opts, "ro") {
		t.Errorf("mounts at /: %+v, want the jail's read-only tmpfs alone", roots)
	}
	if len(orphans) != 1 || orphans[0].point != "/" {
		t.Errorf("mounts whose parent is not listed: %+v, want the root alone", orphans)
	}
}

// inJailMountNS runs f on a thread of this process (root on the host)
// that has entered the mount namespace of pid: it starts at the
// namespace's root, which is what lies beneath the jail's. proc is the
// host's /proc, opened before. The thread ends with f.
func inJailMountNS(t *testing.T, pid int, f func(proc int) error) {
	t.Helper()
	proc, err := unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(proc)
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ns)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			done <- err
			return
		}
		if err := unix.Setns(ns, unix.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		done <- f(proc)
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// skeletonView is what lies beneath a jail's root, seen from its mount
// namespace's root: the mounts of the namespace that are not the jail's
// root or below it, the root's names, and those of /dev and /proc.
type skeletonView struct {
	mounts         []mountLine
	jailRoots      int // mounts on the skeleton's root
	names          []string
	dev, procNames []string
}

func viewSkeleton(t *testing.T, pid int) skeletonView {
	t.Helper()
	var v skeletonView
	var info string
	inJailMountNS(t, pid, func(proc int) error {
		fd, err := unix.Openat(proc, "thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), "mountinfo")
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		info = string(b)
		for _, d := range []struct {
			dir string
			out *[]string
		}{{"/", &v.names}, {"/dev", &v.dev}, {"/proc", &v.procNames}} {
			entries, err := os.ReadDir(d.dir)
			if err != nil {
				return err
			}
			for _, e := range entries {
				*d.out = append(*d.out, e.Name())
			}
		}
		return nil
	})
	all := parseMountinfo(t, info)
	ids := map[int]mountLine{}
	for _, m := range all {
		ids[m.id] = m
	}
	var top *mountLine
	for i, m := range all {
		if _, ok := ids[m.parent]; !ok {
			if top != nil {
				t.Fatalf("two namespace roots in mountinfo:\n%s", info)
			}
			top = &all[i]
		}
	}
	if top == nil {
		t.Fatalf("no namespace root in mountinfo:\n%s", info)
	}
	// The jail's roots: mounts on the skeleton's root, at /.
	jail := map[int]bool{}
	for _, m := range all {
		if m.parent == top.id && m.point == "/" {
			jail[m.id] = true
			v.jailRoots++
		}
	}
	below := func(m mountLine) bool {
		for {
			if jail[m.id] {
				return true
			}
			p, ok := ids[m.parent]
			if !ok {
				return false
			}
			m = p
		}
	}
	for _, m := range all {
		if !below(m) {
			v.mounts = append(v.mounts, m)
		}
	}
	return v
}

// checkSkeleton checks v against the skeleton's definition: a read-only
// tmpfs root holding skeletonNames at most, the host's system binds
// read-only as the host mounts them, the device nodes, an empty proc (the
// one writable mount, which the kernel requires: see skeleton_linux.go),
// and an empty stage.
func checkSkeleton(t *testing.T, v skeletonView) {
	t.Helper()
	host := parseMountinfo(t, mustRead(t, "/proc/self/mountinfo"))
	// hostMount is the host's mount holding path p (the topmost of the
	// deepest), and the root within its filesystem that p has.
	hostMount := func(p string) (mountLine, string, bool) {
		var best mountLine
		found := false
		for _, m := range host {
			if (m.point == p || m.point == "/" || strings.HasPrefix(p, m.point+"/")) && (!found || len(m.point) >= len(best.point)) {
				best, found = m, true
			}
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, best.point), "/")
		return best, filepath.Join(best.root, rel), found
	}
	allowed := skeletonNames()
	for _, n := range v.names {
		if !slices.Contains(allowed, n) {
			t.Errorf("the skeleton's root holds %q, not one of %v", n, allowed)
		}
	}
	devs := []string{"full", "null", "random", "tty", "urandom", "zero"}
	if got := slices.Sorted(slices.Values(v.dev)); !slices.Equal(got, devs) {
		t.Errorf("the skeleton's /dev holds %v, want %v", got, devs)
	}
	for _, n := range v.procNames {
		if _, err := strconv.Atoi(n); err == nil {
			t.Errorf("the skeleton's proc shows process %s", n)
		}
	}
	if len(v.mounts) == 0 {
		t.Fatal("no skeleton mounts")
	}
	procs := 0
	for i, m := range v.mounts {
		switch {
		case i == 0: // parents come first: the namespace's root
			if m.fstype != "tmpfs" || !slices.Contains(m.opts, "ro") {
				t.Errorf("the skeleton's root is %s %v, want a read-only tmpfs", m.fstype, m.opts)
			}
			continue
		case m.fstype == "proc":
			procs++
			if m.point != "/proc" {
				t.Errorf("a proc at %s in the skeleton", m.point)
			}
			continue
		}
		if dev, ok := strings.CutPrefix(m.point, "/dev/"); ok && slices.Contains(devs, dev) {
			// The jail's own device binds, with their attributes
			// (nosuid, noexec; a device node is written, not its
			// filesystem).
			h, root, ok := hostMount(m.point)
			if !ok || h.dev != m.dev || root != m.root || !slices.Contains(m.opts, "nosuid") || !slices.Contains(m.opts, "noexec") {
				t.Errorf("the skeleton's %s is %+v, want the host's device node (%s:%s), nosuid and noexec", m.point, m, h.dev, root)
			}
			continue
		}
		if !slices.Contains(m.opts, "ro") {
			t.Errorf("a writable mount in the skeleton: %+v", m)
		}
		bound := false
		for _, p := range jail.DefaultSystemBinds() {
			if m.point == p || strings.HasPrefix(m.point, p+"/") {
				bound = true
			}
		}
		if !bound {
			t.Errorf("the skeleton mounts %s, which is neither a system bind nor a device: %+v", m.point, m)
			continue
		}
		if h, root, ok := hostMount(m.point); !ok || h.dev != m.dev || root != m.root {
			t.Errorf("the skeleton's %s is %s:%s, the host's %s:%s", m.point, m.dev, m.root, h.dev, root)
		}
	}
	if procs != 1 {
		t.Errorf("%d procs in the skeleton, want its one empty proc", procs)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSkeletonBeneathJailRoot: whoever enters a jail's mount namespace
// (setns, as root on the host) lands in the jail's root (setns follows the
// mounts on the namespace's root), and the classic chroot escape (chroot
// into a subdirectory, walk `..`) by the jail's root, with every
// capability of its namespaces, ends at the jail's root. That root may
// unmount its own root (CAP_SYS_ADMIN over its mount namespace), and then
// finds beneath it the skeleton alone: read-only, what every jail binds
// anyway, no process, no host path; its mounts it can neither unmount,
// write nor make writable.
func TestSkeletonBeneathJailRoot(t *testing.T) {
	x := newSuite(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	h := x.host(id)

	names := namesAt(t, h.PID)
	if !slices.Contains(names, "workspace") || slices.Contains(names, ".boxkite-skeleton") {
		t.Errorf("setns into the jail's mount namespace lands at a root holding %v, want the jail's (with workspace)", names)
	}

	escape := `
import os
os.makedirs("/tmp/esc", exist_ok=True)
os.chroot("/tmp/esc")
for _ in range(64):
    os.chdir("..")
os.chroot(".")
print(" ".join(sorted(os.listdir("/"))))
`
	names = strings.Fields(nsenterJail(t, h.PID, true, escape))
	if !slices.Contains(names, "workspace") || slices.Contains(names, ".boxkite-skeleton") {
		t.Errorf("the chroot escape ended at a root holding %v, want the jail's (with workspace)", names)
	}

	out := nsenterJail(t, h.PID, true, `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("umount-root", libc.umount2(b"/", 2), ctypes.get_errno())
`)
	if !strings.Contains(out, "umount-root 0 0") {
		t.Fatalf("the jail's root could not unmount its root (the test's premise): %s", out)
	}
	v := viewSkeleton(t, h.PID)
	if v.jailRoots != 0 {
		t.Errorf("%d mounts on the skeleton's root after the unmount, want none", v.jailRoots)
	}
	checkSkeleton(t, v)
	out = nsenterJail(t, h.PID, false, `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("names", " ".join(sorted(os.listdir("/"))))
for p in ["/usr", "/etc", "/dev/null", "/proc", "/"]:
    print("umount", p, libc.umount2(p.encode(), 2), ctypes.get_errno())
for p in ["/planted", "/tmp/planted", "/etc/planted", "/usr/planted"]:
    try:
        open(p, "w")
        print("wrote", p)
    except OSError as e:
        print("write", p, e.errno)
for p in ["/", "/usr", "/etc"]:
    print("remount-rw", p, libc.mount(None, p.encode(), None, 32|4096, None), ctypes.get_errno())
`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "names":
			for _, n := range f[1:] {
				if !slices.Contains(skeletonNames(), n) {
					t.Errorf("after the unmount the jail's root finds %q beneath", n)
				}
			}
		case f[0] == "umount" && f[2] == "0":
			t.Errorf("the jail's root unmounted the skeleton's %s: %s", f[1], line)
		case f[0] == "wrote":
			t.Errorf("the jail's root wrote in the skeleton: %s", line)
		case f[0] == "remount-rw" && f[2] == "0":
			t.Errorf("the jail's root made the skeleton's %s writable: %s", f[1], line)
		}
	}
	t.Logf("beneath the jail's root, as its root:\n%s", out)
}

// namesAt lists the root that setns into pid's mount namespace lands at.
func namesAt(t *testing.T, pid int) []string {
	t.Helper()
	var names []string
	inJailMountNS(t, pid, func(int) error {
		entries, err := os.ReadDir("/")
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return err
	})
	return names
}

// nsenterJail runs python3 script as the jail's root in the jail's user
// and mount namespaces, and returns its output: in the root of the jail's
// init when inRoot (nsenter --root --wd), else where setns lands (see
// namesAt).
func nsenterJail(t *testing.T, pid int, inRoot bool, script string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the test needs %s: %v", py, err)
	}
	args := []string{"--target", strconv.Itoa(pid), "--user", "--mount"}
	if inRoot {
		args = append(args, "--root", "--wd")
	}
	args = append(args, "--", py, "-c", script)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v\n%s", err, out)
	}
	return string(out)
}
