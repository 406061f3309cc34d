package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maskAttrs cover a masked /proc file: a /dev/null that, being nodev, cannot
// even be opened.
const maskAttrs = deviceAttr | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV

// Docker's default masks: files that leak host state or poke the kernel.
// And pressure: the host's pressure stall information (the load every
// other sandbox puts on the host's CPU, memory and disk, sampled every
// 2 s), whose files anyone may also write a trigger to. And diskstats and
// partitions: the host's block devices, among them every other sandbox's
// loop device with its size and I/O counters (each of its writes).
var (
	procMasked   = []string{"kcore", "keys", "timer_list", "timer_stats", "sched_debug", "latency_stats", "sysrq-trigger", "kmsg", "config.gz", "diskstats", "partitions"}
	procMaskDirs = []string{"acpi", "scsi", "asound", "driver", "pressure"}
	procReadOnly = []string{"sys", "bus", "fs", "irq"}
)

// placeEtc covers passwd, group, hostname and hosts of the read-only /etc
// with files written for this jail, so only the sandbox's own users exist.
func (b *builder) placeEtc() error {
	etc := b.path("/etc")
	if err := os.MkdirAll(etc, 0o755); err != nil { // when /etc is not bound at all
		return fmt.Errorf("create /etc: %w", err)
	}
	scratch := b.path("/.etc")
	if err := os.Mkdir(scratch, 0o755); err != nil {
		return fmt.Errorf("create scratch dir: %w", err)
	}
	files := b.etcFiles()
	for name, content := range files {
		src := filepath.Join(scratch, name)
		if err := writeFile(src, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write /etc/%s: %w", name, err)
		}
		dst := filepath.Join(etc, name)
		if err := makeMountPoint(dst, true); err != nil && !errors.Is(err, unix.EROFS) {
			return err
		} else if err != nil {
			continue // the host's read-only /etc lacks it; nothing to cover
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mount /etc/%s: %w", name, err)
		}
		attr := &unix.MountAttr{Attr_set: roAttrs}
		if err := unix.MountSetattr(unix.AT_FDCWD, dst, 0, attr); err != nil {
			return fmt.Errorf("make /etc/%s read-only: %w", name, err)
		}
	}
	// The binds keep the inodes alive; the names need not stay visible.
	// One unlink a name (os.RemoveAll opens and lists the directory).
	for name := range files {
		if err := unix.Unlink(filepath.Join(scratch, name)); err != nil {
			return fmt.Errorf("remove scratch file: %w", err)
		}
	}
	if err := unix.Rmdir(scratch); err != nil {
		return fmt.Errorf("remove scratch dir: %w", err)
	}
	return nil
}

func (b *builder) etcFiles() map[string]string {
	uid, gid := strconv.Itoa(b.spec.UID), strconv.Itoa(b.spec.GID)
	shell := "/bin/sh"
	if _, err := os.Stat(b.path("/bin/bash")); err == nil { // the image's or the host's
		shell = "/bin/bash"
	}
	h := b.spec.Hostname
	return map[string]string{
		"passwd": "root:x:0:0:root:/:/bin/sh\n" +
			"sandbox:x:" + uid + ":" + gid + ":sandbox:" + WorkspaceDir + ":" + shell + "\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":    "root:x:0:\ntty:x:5:\nsandbox:x:" + gid + ":\nnogroup:x:65534:\n",
		"hostname": h + "\n",
		"hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
			"127.0.1.1\t" + h + "\n",
	}
}

// placeDev builds a minimal /dev: bound host device nodes, a private devpts,
// /dev/shm and the usual symlinks. /dev is a directory of the root tmpfs
// bound onto itself, not a tmpfs of its own (one superblock fewer, see
// maskProcDirs), and the bind ends up read-only.
func (b *builder) placeDev() error {
	dev := b.path("/dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return fmt.Errorf("create /dev: %w", err)
	}
	// The jail made every top-level name; a link here would bind its target.
	if fi, err := os.Lstat(dev); err != nil || !fi.IsDir() {
		return fmt.Errorf("create /dev: not a directory of the root (%v)", err)
	}
	if err := unix.Mount(dev, dev, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /dev: %w", err)
	}
	// nodev on /dev itself: the device nodes are mounts of their own.
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(unix.AT_FDCWD, dev, 0, attr); err != nil {
		return fmt.Errorf("set attributes of /dev: %w", err)
	}
	for _, t := range b.devs {
		if err := b.place(t); err != nil {
			return err
		}
	}
	pts := filepath.Join(dev, "pts")
	if err := os.Mkdir(pts, 0o755); err != nil {
		return fmt.Errorf("create /dev/pts: %w", err)
	}
	// No gid= option: gid 5 is not mapped in a single-id jail. max=: the
	// host's pseudo-terminals are one pool (kernel.pty.max), see MaxPTYs.
	opts := "newinstance,ptmxmode=0666,mode=0620,max=" + strconv.Itoa(MaxPTYs)
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount devpts: %w", err)
	}
	size := strconv.FormatInt(b.spec.TmpSize, 10)
	if err := b.mountTmpfs(filepath.Join(dev, "shm"), unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size="+size); err != nil {
		return err
	}
	links := map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd",
		"stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	}
	for name, dest := range links {
		if err := os.Symlink(dest, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("create /dev/%s: %w", name, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dev, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make /dev read-only: %w", err)
	}
	return nil
}

// placeProc mounts a proc for the new PID namespace. It must run before the
// host's /proc goes away: a user namespace may only mount proc while a fully
// visible one exists in its mount namespace.
func (b *builder) placeProc() error {
	proc := b.path("/proc")
	if err := os.MkdirAll(proc, 0o555); err != nil {
		return fmt.Errorf("create /proc: %w", err)
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	// Opened now, while /proc/sys is writable; written once Setup needs no
	// more mount clones, which count as mount namespaces.
	limits, err := openNamespaceLimits(proc, b.spec.Nested())
	b.nsLimits = limits
	if err != nil {
		return err
	}
	if err := b.maskProcFiles(proc); err != nil {
		return err
	}
	if err := b.maskProcDirs(proc); err != nil {
		return err
	}
	for _, name := range procReadOnly {
		p := filepath.Join(proc, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		t, err := cloneTree(unix.AT_FDCWD, p, p, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, true)
		if err != nil {
			return err
		}
		err = unix.MoveMount(t.fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		_ = unix.Close(t.fd)
		if err != nil {
			return fmt.Errorf("make /proc/%s read-only: %w", name, err)
		}
	}
	return nil
}

// maskProcFiles covers the procMasked files that exist with a read-only
// /dev/null: b.devNull, a detached clone, moved onto the first, then a
// clone of the mask placed last for each next one. A clone is made only
// when a file needs it: one closed while still detached is dissolved by
// the kernel, and that unmount waits an RCU grace period (expedited) on
// the jail's way to /health (bench/issue27/session29-perf29.md).
func (b *builder) maskProcFiles(proc string) error {
	last := ""
	for _, name := range procMasked {
		p := filepath.Join(proc, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if b.devNull < 0 {
			t, err := cloneTree(unix.AT_FDCWD, last, last, maskAttrs, false)
			if err != nil {
				return err
			}
			b.devNull = t.fd
		}
		err := unix.MoveMount(b.devNull, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		_ = unix.Close(b.devNull)
		b.devNull = -1
		if err != nil {
			return fmt.Errorf("mask /proc/%s: %w", name, err)
		}
		last = p
	}
	return nil
}

// maskProcDirs covers the procMaskDirs that exist with an empty, read-only
// directory of the root tmpfs, bound there. Binds of one directory rather
// than a tmpfs each: every superblock costs the host its own structures
// plus one slot in every memory cgroup's shrinker map, which grows with
// the number of superblocks on the host (issue 27 item 4). The directory
// is unlinked once bound, like placeEtc's scratch files.
func (b *builder) maskProcDirs(proc string) error {
	empty := b.path("/.procmask")
	if err := os.Mkdir(empty, 0o555); err != nil {
		return fmt.Errorf("create mask dir: %w", err)
	}
	for _, name := range procMaskDirs {
		p := filepath.Join(proc, name)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			continue
		}
		t, err := cloneTree(unix.AT_FDCWD, empty, p, roAttrs|unix.MOUNT_ATTR_NOEXEC, false)
		if err != nil {
			return err
		}
		err = unix.MoveMount(t.fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		_ = unix.Close(t.fd)
		if err != nil {
			return fmt.Errorf("mask /proc/%s: %w", name, err)
		}
	}
	if err := os.Remove(empty); err != nil {
		return fmt.Errorf("remove mask dir: %w", err)
	}
	return nil
}

// A nsLimit is one of the jail's user namespace limits (/proc/sys/user),
// opened by openNamespaceLimits and written by limitNamespaces.
type nsLimit struct {
	name  string
	fd    int // open for writing; see writeFile on why not an os.File
	value int64
}

// openNamespaceLimits opens this user namespace's own limits, which bind it
// and its descendants per uid, and works out their values:
//
//   - user.max_*_namespaces are 0, behind the seccomp filter's refusal of
//     the namespace flags. A nested jail keeps user namespaces: its sidecar
//     makes one per command.
//   - user.max_inotify_instances, max_inotify_watches, max_fanotify_groups
//     and max_fanotify_marks are 7/8 of the host's per-user limits
//     (fs.inotify.max_user_*, fs.fanotify.max_user_*). The kernel charges
//     whatever a uid inside holds both here and, for the jail as a whole,
//     to the namespace's owner against the host's limit: with a jail owned
//     by its own host uid (Spec.HostIDBase) the sandbox gets the host's
//     per-user allowance, apart from every other sandbox and host root.
//     Inside, one uid (the agent's) cannot take all of it, so the
//     sidecar's /files/watch keeps an eighth, as RLIMIT_NPROC leaves the
//     sidecar room to fork.
func openNamespaceLimits(proc string, nested bool) ([]nsLimit, error) {
	values := map[string]int64{}
	for _, kind := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "time", "user"} {
		if kind == "user" && nested {
			continue
		}
		values["max_"+kind+"_namespaces"] = 0
	}
	shares := map[string]string{
		"max_inotify_instances": "fs/inotify/max_user_instances",
		"max_inotify_watches":   "fs/inotify/max_user_watches",
		"max_fanotify_groups":   "fs/fanotify/max_user_groups",
		"max_fanotify_marks":    "fs/fanotify/max_user_marks",
	}
	for name, host := range shares {
		n, err := readSysctl(filepath.Join(proc, "sys", host))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a kernel without it
		}
		if err != nil {
			return nil, err
		}
		values[name] = max(1, n-n/8)
	}
	var limits []nsLimit
	for name, v := range values {
		fd, err := openFile(filepath.Join(proc, "sys/user", name), unix.O_WRONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // older kernel
		}
		if err != nil {
			return limits, fmt.Errorf("open limit %s: %w", name, err)
		}
		limits = append(limits, nsLimit{name: name, fd: fd, value: v})
	}
	return limits, nil
}

// readSysctl reads a number from a /proc/sys file.
func readSysctl(path string) (int64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// limitNamespaces writes every opened limit and closes the files. It runs
// once Setup needs no more mount clones, which count as mount namespaces.
func limitNamespaces(limits []nsLimit) error {
	var errs []error
	for _, l := range limits {
		if err := writeFD(l.fd, []byte(strconv.FormatInt(l.value, 10)+"\n")); err != nil {
			errs = append(errs, fmt.Errorf("limit namespaces (%s): %w", l.name, err))
		}
		_ = unix.Close(l.fd)
	}
	return errors.Join(errs...)
}

// pivot makes root the filesystem root and detaches the host's.
func pivot(root string) error {
	if err := os.Chdir(root); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// the top of "." then leaves only the new root, with no put_old dir.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	return nil
}

// loopbackUp brings lo up in the otherwise empty network namespace. A
// namespace made ahead (Spec.NetNS) has it up already, and the jail may
// not change it: then it only reads lo's flags.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	if ifr.Uint16()&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	return nil
}
