package jail

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// ReadSmallFile reads a small file whole with plain system calls: open,
// read until end of file, close (four calls for a file that fits the
// first buffer). os.ReadFile also hands the descriptor to the runtime's
// poller (two fcntl and an epoll_ctl, which a regular file refuses, and
// two fcntl more to undo them), asks its size (fstat) and takes it out
// of the poller again: nine to eleven calls for one /proc, cgroup or
// state file. The server's host capacity reading reads a few such files
// per sandbox and pool member (bench/issue27/session10-warm10.md).
//
// For files that never block: regular files and /proc, /sys and cgroup
// files, not FIFOs or devices. Errors are *fs.PathError as os.ReadFile's,
// so errors.Is(err, fs.ErrNotExist) holds for a missing file.
func ReadSmallFile(path string) ([]byte, error) {
	fd, err := openRetry(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 2048) // a state file (about 1 KiB), /proc/meminfo, in one read
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

func openRetry(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
