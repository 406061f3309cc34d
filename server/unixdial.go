package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxSunPath is the room for a path in a unix socket address (sun_path),
// less the terminating NUL.
const maxSunPath = len(unix.RawSockaddrUnix{}.Path) - 1

// DialUnix connects to the unix socket at path. A path longer than a socket
// address can hold (a deep BOXKITE_HOME makes sandbox sockets long) is
// reached through /proc/self/fd/N/NAME, where N is its directory held open
// for the duration of the dial.
func DialUnix(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	if len(path) <= maxSunPath {
		return d.DialContext(ctx, "unix", path)
	}
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open socket directory: %w", err)
	}
	defer dir.Close()
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(short) > maxSunPath {
		return nil, fmt.Errorf("dial %s: socket name too long", path)
	}
	return d.DialContext(ctx, "unix", short)
}
