package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The spawner's skeleton root (issue 27, items 1a and 4).
//
// A jail's pivot_root walks every thread of the host (chroot_fs_refs,
// under tasklist_lock) for those whose root or working directory is the
// old root: ~0.075 µs of CPU a host thread, ~1 ms a jail's start at 2,000
// idle sandboxes, with every fork and exit of the host waiting on the
// lock meanwhile (bench/issue27/session24-cold27.md). Switching root with
// MS_MOVE of the new root onto / and chroot is O(1), but leaves the old
// root mounted beneath the new one, revealed to whoever unmounts the new
// root with CAP_SYS_ADMIN over the jail's mount namespace.
//
// So the spawner's helper makes, once, a mount namespace whose root is a
// skeleton (makeSkeleton): a read-only tmpfs holding exactly what every
// jail binds anyway, read-only as the jail binds it (the system binds of
// DefaultSystemBinds, the device nodes of /dev), the stage directory
// Setup assembles the root on, and a proc of an empty PID namespace: a
// user namespace may mount a proc only where a proc is already fully
// visible in its mount namespace (mount_too_revealing), and one of a
// namespace with no process shows no process. No host /, /proc or /sys.
// The helper pivots into it once (one walk of the host's threads a
// helper, not one a jail) and clones each jail from a thread that has
// entered it (inSkeleton): the jail's clone copies the skeleton, and its
// Setup moves its root onto / and chroots (moveRoot). What lies beneath a
// jail's root is the skeleton, nothing the jail does not see read-only
// anyway.
//
// The helper itself stays in its own (trimmed) namespace, with the host's
// /proc and cgroup directories, for what it does by path: it opens the
// cgroups of each request, and writes each jail's id maps through the
// host's /proc (openProc, as the clone's thread no longer sees it).
//
// Whoever enters a jail's mount namespace with setns (nsenter -m) lands
// at the namespace's root, the skeleton, not in the jail's root: nsenter
// needs --root (the target's root) to see the jail's tree.

// skeletonMarker names, at the skeleton's root, an empty file that tells
// Setup its namespace is the skeleton (inSkeletonRoot).
const skeletonMarker = "/.boxkite-skeleton"

// openProc opens name below the host's /proc: through hostProc when it is
// not nil (the spawner's helper, whose clone threads see the skeleton's
// empty proc: ServeSpawner opens it before any thread enters the
// skeleton), by path otherwise.
func openProc(hostProc *os.File, name string, flags int) (int, error) {
	if hostProc != nil {
		fd, err := unix.Openat(int(hostProc.Fd()), name, flags|unix.O_CLOEXEC, 0)
		runtime.KeepAlive(hostProc)
		return fd, err
	}
	return unix.Open("/proc/"+name, flags|unix.O_CLOEXEC, 0)
}

// skeletonProcArg is the sidecar's subcommand that mounts the skeleton's
// proc (ServeSkeletonProc), run by makeSkeleton in a new PID namespace.
const skeletonProcArg = "skeleton-proc"

// makeSkeleton builds the skeleton in a new mount namespace and returns a
// descriptor of that namespace. It runs on a thread of its own, which
// ends with it: the thread leaves the helper's namespace for the new one.
func makeSkeleton() (int, error) {
	type result struct {
		ns  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := notMainThread(); err != nil {
			ch <- result{-1, err}
			return
		}
		ns, err := buildSkeleton()
		ch <- result{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// buildSkeleton is makeSkeleton's locked thread.
func buildSkeleton() (ns int, err error) {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
		return -1, fmt.Errorf("make skeleton: %w", err)
	}
	// The thread's own (CLONE_FS): a hardened host's 077 would close the
	// skeleton's directories to the jails' roots, which are not the host's.
	unix.Umask(0o022)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return -1, fmt.Errorf("make skeleton: make / private: %w", err)
	}
	ns, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("make skeleton: %w", err)
	}
	defer func() {
		if err != nil {
			_ = unix.Close(ns)
			ns = -1
		}
	}()
	// Built on the stage, which every jail covers with its own root.
	root := stage
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=256"); err != nil {
		return -1, fmt.Errorf("make skeleton: mount its root: %w", err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	for _, p := range DefaultSystemBinds() {
		if err := skeletonBind(p, at(p)); err != nil {
			return -1, err
		}
	}
	for _, name := range devices {
		p := "/dev/" + name
		if err := makeMountPoint(at(p), true); err != nil {
			return -1, fmt.Errorf("make skeleton: %w", err)
		}
		t, err := cloneTree(unix.AT_FDCWD, p, p, deviceAttr, false)
		if err != nil {
			return -1, fmt.Errorf("make skeleton: %w", err)
		}
		err = unix.MoveMount(t.fd, "", unix.AT_FDCWD, at(p), unix.MOVE_MOUNT_F_EMPTY_PATH)
		_ = unix.Close(t.fd)
		if err != nil {
			return -1, fmt.Errorf("make skeleton: mount %s: %w", p, err)
		}
	}
	for _, dir := range []string{stage, "/proc"} {
		if err := os.Mkdir(at(dir), 0o755); err != nil {
			return -1, fmt.Errorf("make skeleton: %w", err)
		}
	}
	if err := mountEmptyProc(at("/proc")); err != nil {
		return -1, err
	}
	if err := createFile(at(skeletonMarker), 0o444); err != nil {
		return -1, fmt.Errorf("make skeleton: %w", err)
	}
	// The one pivot_root of the helper's life.
	if err := pivot(root); err != nil {
		return -1, fmt.Errorf("make skeleton: %w", err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: roAttrs | unix.MOUNT_ATTR_NOEXEC}); err != nil {
		return -1, fmt.Errorf("make skeleton: make its root read-only: %w", err)
	}
	return ns, nil
}

// skeletonBind copies the host's system path p to dst: a read-only bind
// with the mounts below it, as cloneSources binds it into every jail, or
// the same link when p is a symlink. A missing p is skipped.
func skeletonBind(p, dst string) error {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("make skeleton: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		dest, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("make skeleton: %w", err)
		}
		if err := os.Symlink(dest, dst); err != nil {
			return fmt.Errorf("make skeleton: %w", err)
		}
		return nil
	}
	if err := makeMountPoint(dst, !fi.IsDir()); err != nil {
		return fmt.Errorf("make skeleton: %w", err)
	}
	t, err := cloneTree(unix.AT_FDCWD, p, p, roAttrs, true)
	if err != nil {
		return fmt.Errorf("make skeleton: %w", err)
	}
	err = unix.MoveMount(t.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
	_ = unix.Close(t.fd)
	if err != nil {
		return fmt.Errorf("make skeleton: mount %s: %w", p, err)
	}
	return nil
}

// mountEmptyProc mounts at dir a proc of a new PID namespace whose only
// process (this binary's skeleton-proc subcommand, ServeSkeletonProc)
// mounts it and exits: a proc that shows no process. It is read-write,
// as a jail's own proc is: a proc locked read-only would allow the jail
// only read-only procs (mnt_already_visible).
func mountEmptyProc(dir string) error {
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{"boxkite-sidecar", skeletonProcArg, dir},
		Env: minimalEnv, Dir: "/", Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make skeleton: mount an empty proc: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("make skeleton: no proc at %s (%v)", dir, err)
	}
	return nil
}

// ServeSkeletonProc is `boxkite-sidecar skeleton-proc DIR`, run by the
// spawner's helper as the only process of a new PID namespace: it mounts
// that namespace's proc on DIR (mountEmptyProc) and exits, which leaves
// the proc empty.
func ServeSkeletonProc(dir string) error {
	if os.Getpid() != 1 || !filepath.IsAbs(dir) {
		return errors.New("skeleton proc: only the spawner runs this")
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("skeleton proc: %w", err)
	}
	return nil
}

// inSkeleton runs clone on a locked thread that has entered the skeleton
// namespace ns (and the network namespace netns, when it is not -1), so
// that the jail it clones copies the skeleton. The thread ends with its
// goroutine: it no longer shares the helper's root.
func inSkeleton(ns, netns int, clone func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		if err := notMainThread(); err != nil {
			ch <- err
			return
		}
		enter := func() error {
			// setns into a mount namespace wants a thread of its own
			// filesystem context (root and working directory).
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("enter the skeleton: %w", err)
			}
			if err := unix.Setns(ns, unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("enter the skeleton: %w", err)
			}
			return clone()
		}
		if netns < 0 {
			ch <- enter()
			return
		}
		// The network namespace first, while the thread still sees the
		// host's /proc (enterNetNS opens its own there).
		_, err := enterNetNS(netns, enter)
		ch <- err
	}()
	return <-ch
}

// notMainThread fails on the process's main thread, which never ends: a
// thread that leaves the helper's namespace must end with its goroutine.
// The helper's command keeps its main goroutine there (cmd/boxkite-sidecar).
func notMainThread() error {
	if unix.Gettid() == unix.Getpid() {
		return errors.New("enter the skeleton: on the main thread, which would stay there")
	}
	return nil
}

// inSkeletonRoot reports whether this process's root is the spawner's
// skeleton: a read-only tmpfs holding skeletonMarker. Setup then switches
// to the jail's root with moveRoot rather than pivot.
func inSkeletonRoot() bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil || st.Type != unix.TMPFS_MAGIC || st.Flags&unix.ST_RDONLY == 0 {
		return false
	}
	fi, err := os.Lstat(skeletonMarker)
	return err == nil && fi.Mode().IsRegular()
}

// moveRoot makes root the filesystem root by moving its mount onto / and
// chrooting into it: O(1), where pivot_root walks the host's threads. The
// namespace's root, the skeleton, stays beneath it (see inSkeleton).
func moveRoot(root string) error {
	if err := os.Chdir(root); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	if err := unix.Mount(".", "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move root: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	return nil
}

// procFDPath is the descriptor a /proc/self/fd/N path names, ok false for
// any other path, and for an N the kernel does not resolve: one with a
// leading zero (name_to_int), which execve would fail with ENOENT where an
// execveat of descriptor N would run it (FuzzProcFDPath).
func procFDPath(path string) (fd int, ok bool) {
	s, ok := strings.CutPrefix(path, "/proc/self/fd/")
	if !ok || s == "" || len(s) > 4 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		fd = fd*10 + int(c-'0')
	}
	return fd, true
}
