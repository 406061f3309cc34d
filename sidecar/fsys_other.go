//go:build unix && !linux

package sidecar

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// oPath: without O_PATH, directories are opened for reading.
const oPath = unix.O_RDONLY

func mayWrite(dir int, name string) error {
	return unix.Faccessat(dir, name, unix.W_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
}

func futimes(f *os.File, t time.Time) error {
	tv := unix.NsecToTimeval(t.UnixNano())
	return unix.Futimes(int(f.Fd()), []unix.Timeval{tv, tv})
}

// openBeneath opens the path comps below the directory dir without
// following any symlink, one component at a time.
func openBeneath(dir int, comps []string, flags int) (int, error) {
	return openEachBeneath(dir, comps, flags)
}

// syncFS: without syncfs, every filesystem is flushed.
func syncFS(int) error { unix.Sync(); return nil }

// writeOut: without sync_file_range, the file is fsynced whole.
func writeOut(f *os.File) error { return f.Sync() }

// mountOf says which mount fd's file is on: here its device, which misses
// a bind mount of the same filesystem (Linux tells the mount's id).
func mountOf(fd int) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("fstat: %w", err)
	}
	return fmt.Sprintf("dev %d", st.Dev), nil
}
