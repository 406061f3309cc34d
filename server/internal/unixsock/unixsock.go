// Package unixsock dials the unix sockets of the local driver's sidecars
// safely: it never follows a link in the last component and accepts only a
// socket owned by this process's user. The control plane's proxy and the
// local driver both use it.
package unixsock

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dial connects to the unix socket at path, one this server made (the
// local driver's sidecar socket, in the sandbox's own directory). It
// never follows a link in the last component and refuses anything but a
// socket owned by this process's user, so whoever could plant a link or
// another file there still could not point the server, and the sidecar
// token it sends, at another socket of the host. It connects through
// /proc/self/fd/N of the socket's own descriptor, which acts on the inode
// it checked and keeps a deep path within a socket address.
func Dial(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open socket directory: %w", err)
	}
	defer dir.Close()
	sock, err := OpenOwn(int(dir.Fd()), filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	defer sock.Close() // the connection does not need it
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d", sock.Fd()))
}

// OpenOwn opens name in the directory dirfd as an O_PATH descriptor
// without following a link, and checks it is a unix socket owned by this
// process's user.
func OpenOwn(dirfd int, name string) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = f.Close()
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a socket (mode %#o)", name, st.Mode)
	}
	if int(st.Uid) != os.Geteuid() {
		_ = f.Close()
		return nil, fmt.Errorf("%s belongs to uid %d, not this server", name, st.Uid)
	}
	return f, nil
}
