//go:build linux

package loopdisk

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openImage opens a disk image read-write for its loop device. An image on
// XFS (the clone pool's) is opened by handle, which gives the open file
// FMODE_NOCMTIME: writes through it leave the image's mtime and ctime
// alone. Opened by name, every loop write a clock tick after the last one
// changes the timestamps, XFS logs them, and the loop device's next flush
// (an fsync of the image, two for each journal commit of the sandbox's
// ext4) must then force XFS's log: a log write between two flushes of the
// pool's loop device, each an fsync of the pool's image on the host, where
// a flush alone would do. Nothing reads an image's timestamps; its data
// and any block it allocates are flushed and logged as before (issue 27).
// Anything that refuses the handle route (not XFS, no CAP_SYS_ADMIN, an
// old kernel) gets the file opened by name.
func openImage(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &st) != nil || st.Type != unix.XFS_SUPER_MAGIC {
		return f, nil
	}
	h, err := openByHandle(f)
	if err != nil {
		return f, nil
	}
	f.Close()
	return h, nil
}

// xfsHandleReq is XFS's struct xfs_fsop_handlereq (xfs_fs.h).
type xfsHandleReq struct {
	fd       uint32
	path     unsafe.Pointer
	oflags   uint32
	ihandle  unsafe.Pointer
	ihandlen uint32
	ohandle  unsafe.Pointer
	ohandlen unsafe.Pointer // *uint32
}

// XFS handle ioctls: _IOWR('X', nr, struct xfs_fsop_handlereq).
var (
	xfsFDToHandle   = xfsIOWR(106)
	xfsOpenByHandle = xfsIOWR(107)
)

func xfsIOWR(nr uintptr) uintptr {
	const read, write = 2, 1
	return (read|write)<<30 | unsafe.Sizeof(xfsHandleReq{})<<16 | 'X'<<8 | nr
}

// openByHandle opens f's file again, read-write, through its XFS handle
// (XFS_IOC_FD_TO_HANDLE, then XFS_IOC_OPEN_BY_HANDLE on its directory,
// which needs CAP_SYS_ADMIN).
func openByHandle(f *os.File) (*os.File, error) {
	handle := make([]byte, 64) // an XFS handle is 24 bytes
	n := uint32(len(handle))
	req := &xfsHandleReq{fd: uint32(f.Fd()), ohandle: unsafe.Pointer(&handle[0]), ohandlen: unsafe.Pointer(&n)}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), xfsFDToHandle, uintptr(unsafe.Pointer(req)))
	runtime.KeepAlive(req)
	if errno != 0 {
		return nil, fmt.Errorf("xfs handle of %s: %w", f.Name(), errno)
	}
	dir, err := os.Open(filepath.Dir(f.Name())) // the ioctl wants a directory of the filesystem
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	open := &xfsHandleReq{oflags: unix.O_RDWR, ihandle: unsafe.Pointer(&handle[0]), ihandlen: n}
	// The new descriptor is not close-on-exec (the ioctl takes no such
	// flag): the fork lock keeps an exec from starting before it is.
	syscall.ForkLock.RLock()
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), xfsOpenByHandle, uintptr(unsafe.Pointer(open)))
	if errno == 0 {
		unix.CloseOnExec(int(fd))
	}
	syscall.ForkLock.RUnlock()
	runtime.KeepAlive(open)
	runtime.KeepAlive(handle)
	if errno != 0 {
		return nil, fmt.Errorf("open %s by its xfs handle: %w", f.Name(), errno)
	}
	return os.NewFile(fd, f.Name()), nil
}
