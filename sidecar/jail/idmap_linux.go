package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// MappingUserNS returns a user namespace that maps ids 0..IDRange-1 to
// host ids hostBase.., like a jail's of that base, with no process in it:
// the handle idmapped mounts (IDMappedClone) take. The caller closes it.
//
// A user namespace is made by a process, and a Go program cannot unshare
// one (it has threads), so a child is started in one, stopped by ptrace
// before its first instruction, and killed once its namespace is open.
func MappingUserNS(hostBase int) (*os.File, error) {
	if hostBase < IDRange {
		return nil, fmt.Errorf("make mapping user namespace: host id base %d overlaps the host's own ids", hostBase)
	}
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostBase, Size: IDRange}}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"boxkite-userns"}, Env: []string{}, Dir: "/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER, UidMappings: m, GidMappings: m,
		Ptrace: true, Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("make mapping user namespace: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		return nil, fmt.Errorf("make mapping user namespace: %w", err)
	}
	return f, nil
}

// IDMappedClone returns a detached copy of the mount at path (with the
// mounts below it when recursive), idmapped through userns: a file owned
// by on-disk id n shows as owned by the host id userns maps n to, and a
// file made through it by that host id is stored as n. attrs are further
// MOUNT_ATTR_* flags. The caller closes the descriptor or moves the mount.
//
// The filesystem must allow idmapped mounts (ext4, xfs, btrfs, tmpfs since
// Linux 6.3, …; not overlayfs itself, whose layers may be idmapped).
func IDMappedClone(path string, userns *os.File, attrs uint64, recursive bool) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, flags)
	if err != nil {
		return -1, fmt.Errorf("clone mount of %s: %w", path, err)
	}
	attr := &unix.MountAttr{Attr_set: attrs | unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(fd, "", setFlags, attr); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EINVAL) {
			err = fmt.Errorf("%w (its filesystem cannot be idmapped, or the kernel is older than 5.12)", err)
		}
		return -1, fmt.Errorf("idmap mount of %s: %w", path, err)
	}
	return fd, nil
}
