package jail

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// writeFile is os.WriteFile, and createFile an os.OpenFile with O_CREATE
// closed at once, without an os.File: for a regular file os makes the
// descriptor non-blocking, offers it to the poller (which refuses it) and
// makes it blocking again, five system calls around the two or three that
// do the work. A jail's Setup writes or creates ~15 files on every cold
// start (issue 27).
func writeFile(path string, data []byte, perm uint32) error {
	fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = unix.Close(fd)
			return fmt.Errorf("write %s: %w", path, err)
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// createFile makes path a file if nothing is there; an existing file is
// left as it is.
func createFile(path string, perm uint32) error {
	fd, err := openFile(path, unix.O_RDONLY|unix.O_CREAT, perm)
	if err != nil {
		return err
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// openFile is unix.Open with O_CLOEXEC, retried on EINTR as os does.
func openFile(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, perm)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", path, err)
		}
		return fd, nil
	}
}
