package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// startOwned starts cmd, whose SysProcAttr clones a new user namespace.
// With a host id range it does so with the calling thread's effective uid
// and gid set to the range's base, capabilities kept, because the kernel
// makes the euid of the task that creates a user namespace its owner and
// charges the per-user counters of everything inside to that owner in the
// parent namespace: inotify instances and watches, fanotify groups and
// marks, namespaces of every kind, and the RLIMIT_NPROC,
// RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE and RLIMIT_MEMLOCK counts. Owned by
// root, every jail and host root itself drew on one allowance, and one
// sandbox holding all inotify instances left the others none.
//
// Only the calling thread's credentials change, and only while cmd.Start
// runs: the thread is locked meanwhile (a build's caller has it locked
// already: the jail copies its namespaces), and threads the runtime makes
// meanwhile are cloned from its template thread, never from a locked one.
// The uid and gid maps are still written by this thread (os/exec writes
// them before the child goes on), which needs CAP_SETUID, CAP_SETGID and
// CAP_SETFCAP in the host's namespace, so its effective capabilities are
// raised back after the euid change cleared them. No process is added.
//
// A jail that is not a build starts with forkJail (startForked), so its
// init starts with its final bounding set, and, when not nested, in its
// cgroup (spec.CgroupDirs; the descriptors opened here, as root, see
// cgroup_place_linux.go); a build's keeps os/exec's clone (its
// parent-death signal), and its init drops its own (Lockdown).
func startOwned(cmd *exec.Cmd, spec Spec) error {
	if spec.Nested() {
		if spec.Build != nil {
			return cmd.Start()
		}
		return startForked(cmd, spec, nil)
	}
	var place *cgroupPlace
	if len(spec.CgroupDirs) > 0 && placesItself(spec) {
		var err error
		if place, err = openCgroupPlace(spec.CgroupDirs); err != nil {
			return err
		}
		defer place.close()
	}
	start := func() error { return startForked(cmd, spec, place) }
	if spec.Build != nil {
		start = cmd.Start
	}
	owned := func() error {
		return asOwner(spec, start, func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	if spec.NetNS != nil {
		return inNetNS(int(spec.NetNS.Fd()), owned)
	}
	return owned()
}

// startForked starts cmd (a jail's init, not a build's) with forkJail, in
// place's cgroup unless place is nil, and sets cmd.Process, as a
// Spawner's launch does; cmd's standard streams must be files or nil.
func startForked(cmd *exec.Cmd, spec Spec, place *cgroupPlace) error {
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("start jail: %w", err)
	}
	defer devNull.Close()
	fds, err := cmdFDs(nil, devNull, cmd)
	if err != nil {
		return err
	}
	pid, err := forkJail(forkOptions{
		path: cmd.Path, argv: cmd.Args, env: cmd.Env, dir: cmd.Dir, files: fds,
		attr: cmd.SysProcAttr, keep: SidecarCaps(spec.Nested()), place: place,
		cgroupNS: placesItself(spec), // Launch.CgroupNS
	})
	runtime.KeepAlive(cmd)
	if err != nil {
		return err
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		// Never in practice (a pidfd_open of our own child); without a
		// Process the caller could neither kill nor reap it.
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return fmt.Errorf("find jail %d: %w", pid, err)
	}
	cmd.Process = p
	return nil
}

// asOwner runs start, which clones the jail, on a locked thread whose
// effective ids are the range's base (see startOwned), and restores them.
// undo ends what start started if they cannot be restored.
func asOwner(spec Spec, start func() error, undo func()) error {
	runtime.LockOSThread()
	uid, gid := unix.Geteuid(), unix.Getegid()
	err := setThreadIDs(spec.HostIDBase, spec.HostIDBase)
	if err == nil {
		err = start()
	} else {
		err = fmt.Errorf("become the namespace's owner %d: %w", spec.HostIDBase, err)
	}
	if rerr := setThreadIDs(uid, gid); rerr != nil {
		// Never reached in practice: the real and saved ids are the
		// caller's, which the euid may always return to. If it were, the
		// thread stays locked and ends with its goroutine, and the jail,
		// started as the wrong owner, does not run.
		if err == nil {
			undo()
		}
		return errors.Join(err, fmt.Errorf("restore the thread's ids: %w", rerr))
	}
	runtime.UnlockOSThread()
	return err
}

// setThreadIDs sets the effective uid and gid of the calling thread alone
// (Go's setres*id wrappers change every thread of the process) and raises
// its effective capabilities to its permitted ones, which an euid leaving 0
// clears (the real and saved uids stay 0, so the permitted set stays).
func setThreadIDs(uid, gid int) error {
	const unchanged = ^uintptr(0) // -1
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, unchanged, uintptr(gid), unchanged); e != 0 {
		return fmt.Errorf("set effective gid %d: %w", gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, unchanged, uintptr(uid), unchanged); e != 0 {
		return fmt.Errorf("set effective uid %d: %w", uid, e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("get capabilities: %w", err)
	}
	for i := range caps {
		caps[i].Effective = caps[i].Permitted
	}
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("raise capabilities: %w", err)
	}
	return nil
}

// idmapData makes the detached mounts of the sandbox's data (workspace,
// outputs, binds such as volumes) idmapped through the jail's own user
// namespace, before init attaches them. Through such a mount a file stored
// with uid n appears as the jail's host id HostIDBase+n, and a file the
// jail creates as HostIDBase+n is stored as n: on disk the data holds the
// ids the sandbox sees (the sandbox user's files are 1001, its root's 0),
// whatever host range the jail has. So a volume shared by jails of
// different ranges, or a disk a later jail takes over, needs no chown.
//
// The kernel allows it on ext4 (the quota disks and volumes), tmpfs, xfs
// and btrfs since Linux 5.12 (tmpfs 6.3), not on overlayfs or network
// filesystems: a directory there fails the start with a message naming it.
func idmapData(pid int, mounts []hostMount) error {
	var ns *os.File
	for _, m := range mounts {
		if !m.idmap {
			continue
		}
		if ns == nil {
			var err error
			if ns, err = os.Open("/proc/" + strconv.Itoa(pid) + "/ns/user"); err != nil {
				return fmt.Errorf("open the jail's user namespace: %w", err)
			}
			defer ns.Close()
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
		err := unix.MountSetattr(int(m.file.Fd()), "", unix.AT_EMPTY_PATH, attr)
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("idmap %s for %s: its filesystem does not support idmapped mounts: %w", m.file.Name(), m.target, err)
		}
		if err != nil {
			return fmt.Errorf("idmap %s for %s: %w", m.file.Name(), m.target, err)
		}
	}
	return nil
}
