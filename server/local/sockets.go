//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/boxkite/boxkite/server/internal/unixsock"
	"golang.org/x/sys/unix"
)

// The server's channels to a sandbox are unix sockets it makes itself,
// outside the jail, and the host side never uses a path the jail can
// write:
//
//   - The sidecar's listening socket is StateDir/sandboxes/<id>/sidecar.sock,
//     in the sandbox's directory (0700, the server's), which no jail has
//     mounted. The jail's init gets the listener as a descriptor and the
//     sidecar serves on it (jail.Start's listener); the server dials the
//     path, checking it is a socket of its own (unixsock.Dial). It stays
//     in place when the server restarts, so a new server reaches adopted
//     sandboxes the same way.
//   - The egress socket is in the run dir, which the jail sees read-only
//     at /run/boxkite: host root's, group the jail's root, 0750, so only
//     the sidecar may look in, and nothing in the jail can create, replace
//     or remove an entry there. Ownership is what holds, not the read-only
//     bind (which the jail's mount namespace does not lock): host root is
//     not mapped in the jail, so even its root with every capability of
//     its namespaces cannot write the directory. The socket is handed to
//     the jail's root (0600) through a descriptor, never by path. The
//     sidecar connects to it, so a listening descriptor would not help it;
//     see docs/security.md, Sockets.

// sidecarSocket is the sidecar's socket in the sandbox's directory.
const sidecarSocket = "sidecar.sock"

// listenIn makes a unix socket named name in dir, a directory only the
// server can write, and returns its listener and an O_PATH descriptor of
// the socket's inode, checked to be a socket the server owns. It binds
// through the directory's descriptor, so a deep state dir never makes an
// address too long for a socket. Closing the listener leaves the name.
func listenIn(dir, name string) (*net.UnixListener, *os.File, error) {
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	l, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
	if err != nil {
		return nil, nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	sock, err := unixsock.OpenOwn(int(d.Fd()), name)
	if err != nil {
		_ = ul.Close()
		return nil, nil, err
	}
	return ul, sock, nil
}

// setSocketOwner gives the socket behind the O_PATH descriptor sock to
// uid and gid (when chown is set) with mode: on the descriptor, never on a
// path.
func setSocketOwner(sock *os.File, chown bool, uid, gid int, mode uint32) error {
	fd := int(sock.Fd())
	if chown {
		if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("chown socket: %w", err)
		}
	}
	// fchmod refuses an O_PATH descriptor; fchmodat2 (Linux 6.6) takes it
	// with AT_EMPTY_PATH, and before it the descriptor's /proc link, which
	// the kernel resolves to this very inode, does the same.
	empty, err := unix.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(fd), uintptr(unsafe.Pointer(empty)), uintptr(mode), unix.AT_EMPTY_PATH, 0, 0)
	if e == 0 {
		return nil
	}
	if !errors.Is(e, unix.ENOSYS) && !errors.Is(e, unix.EINVAL) {
		return fmt.Errorf("chmod socket: %w", e)
	}
	if err := os.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), fs.FileMode(mode)); err != nil {
		return fmt.Errorf("chmod socket: %w", err)
	}
	return nil
}

// removeSocket removes name from dir if it is a socket (a previous
// server's egress socket), acting on the directory's descriptor.
func removeSocket(dir, name string) error {
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	var st unix.Stat_t
	err = unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "stat", Path: filepath.Join(dir, name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s is not a socket", filepath.Join(dir, name))
	}
	if err := unix.Unlinkat(int(d.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: filepath.Join(dir, name), Err: err}
	}
	return nil
}

// listenSidecar makes the sidecar's listening socket in the sandbox's
// directory dir and returns it as a file for the jail's init; the server
// keeps no listener of its own.
func listenSidecar(dir string) (*os.File, error) {
	l, sock, err := listenIn(dir, sidecarSocket)
	if err != nil {
		return nil, fmt.Errorf("listen for the sidecar: %w", err)
	}
	defer l.Close() // the jail's copy keeps the socket listening
	err = setSocketOwner(sock, false, 0, 0, 0o600)
	_ = sock.Close()
	if err != nil {
		return nil, fmt.Errorf("listen for the sidecar: %w", err)
	}
	f, err := l.File()
	if err != nil {
		return nil, fmt.Errorf("listen for the sidecar: %w", err)
	}
	return f, nil
}
