package jail

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// writeFile is os.WriteFile, createFile an os.OpenFile with O_CREATE
// closed at once, and readFile os.ReadFile, without an os.File: for a
// regular file os makes the descriptor non-blocking, offers it to the
// poller (which refuses it) and makes it blocking again, five system calls
// around the two or three that do the work. A jail's Setup writes, creates
// or reads ~30 files on every cold start (issue 27).
func writeFile(path string, data []byte, perm uint32) error {
	fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := writeFD(fd, data); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// writeFD writes all of data to fd.
func writeFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// readFile is os.ReadFile for the small files of /proc/sys, without an
// os.File (which offers a /proc file to the poller and takes it back on
// close: four system calls more).
func readFile(path string) ([]byte, error) {
	fd, err := openFile(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 512)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
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
