package sidecar

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oPath opens a directory only to resolve names beneath it: it needs
// search permission, not read, and cannot be read or written through.
const oPath = unix.O_PATH

// mayWrite reports, as an error, whether the calling thread's filesystem
// ids may open the name in dir for writing: faccessat2 with AT_EACCESS
// checks the fsuid and the effective capabilities, which fsUser.do set.
// Kernels before 5.8 lack faccessat2; there the check is left to the
// rename, which needs only the directory.
func mayWrite(dir int, name string) error {
	err := unix.Faccessat2(dir, name, unix.W_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}

// futimes sets a file's access and modification times through its
// descriptor (utimensat with a NULL path).
func futimes(f *os.File, t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// openBeneath opens the path comps below the directory dir without
// following any symlink and without leaving dir: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW component at a
// time on kernels before 5.6.
func openBeneath(dir int, comps []string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	rel := "."
	if len(comps) > 0 {
		rel = strings.Join(comps, "/")
	}
	fd, err := unix.Openat2(dir, rel, &how)
	if !errors.Is(err, unix.ENOSYS) {
		return fd, err
	}
	return openEachBeneath(dir, comps, flags)
}

// syncFS flushes the filesystem holding fd: data, metadata and the
// journal, and since Linux 5.8 it reports write-back errors met since fd
// was opened.
func syncFS(fd int) error { return unix.Syncfs(fd) }

// writeOut writes f's data to its disk and waits for it, without
// committing its metadata (sync_file_range): what writeFile does before
// the rename, so the rename, which a journal commits with the file's
// blocks, never names a file whose data is not on the disk. A write-back
// error (a full or failing disk) is reported here, before the rename.
func writeOut(f *os.File) error {
	const all = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	if err := unix.SyncFileRange(int(f.Fd()), 0, 0, all); err != nil {
		return fmt.Errorf("write out: %w", err)
	}
	return nil
}

// mountOf says which mount fd's file is on: the mount's id where the
// kernel tells it (statx STATX_MNT_ID, Linux 5.8), else its device
// (which misses a bind mount of the same filesystem).
func mountOf(fd int) (string, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err != nil {
		return "", fmt.Errorf("statx: %w", err)
	}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		return fmt.Sprintf("mnt %d", stx.Mnt_id), nil
	}
	return fmt.Sprintf("dev %d:%d", stx.Dev_major, stx.Dev_minor), nil
}
