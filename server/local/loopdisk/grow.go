//go:build linux

package loopdisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The clone pool is made the size of the host filesystem it is on, so that
// it never fills before the host does and the host's free-space watermark
// is the one that binds. A host filesystem grown after that (an operator
// resizing the disk, a volume grown by its cloud) left the pool at its old
// size: creates were admitted by the host's free space while every write
// inside a sandbox failed on the full pool (found by session 26). So the
// pool follows the host: GrowClonePool extends the sparse image, tells its
// loop device the new capacity and grows XFS into it, online, under the
// sandboxes' running disks (XFS grows mounted; it cannot shrink, and a
// pool larger than its host, a host shrunk or one smaller than
// MinClonePool, is left as it is).

// MinClonePool is the smallest pool made, whatever the host's size.
const MinClonePool = 1 << 30

// ClonePoolGrowStep is the least growth GrowClonePool makes: a host within
// it of the pool's size leaves the pool alone (an XFS cannot grow by less
// than a few blocks, and a grow per host block gained would be a log
// write each).
const ClonePoolGrowStep = 64 << 20

// ClonePoolTarget is the size a clone pool on the filesystem of dir is
// made or grown to: that filesystem's size, at least MinClonePool.
func ClonePoolTarget(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return max(int64(st.Blocks)*st.Bsize, MinClonePool), nil
}

// xfsGeomV1 is XFS's struct xfs_fsop_geom_v1 (xfs_fs.h), the part of the
// geometry every kernel answers.
type xfsGeomV1 struct {
	blocksize, rtextsize, agblocks, agcount, logblocks, sectsize, inodesize, imaxpct uint32
	datablocks, rtblocks, rtextents, logstart                                        uint64
	uuid                                                                             [16]byte
	sunit, swidth, version, flags, logsectsize, rtsectsize, dirblocksize             uint32
}

// xfsGrowfsData is XFS's struct xfs_growfs_data.
type xfsGrowfsData struct {
	newblocks uint64
	imaxpct   uint32
	_         uint32
}

// XFS's geometry and grow ioctls, which golang.org/x/sys/unix does not
// name: _IOR('X', 100, struct xfs_fsop_geom_v1) and
// _IOW('X', 110, struct xfs_growfs_data).
var (
	xfsFSGeometryV1 = uintptr(2<<30 | unsafe.Sizeof(xfsGeomV1{})<<16 | 'X'<<8 | 100)
	xfsGrowFSData   = uintptr(1<<30 | unsafe.Sizeof(xfsGrowfsData{})<<16 | 'X'<<8 | 110)
)

// xfsGeometry returns the geometry of the XFS f is on.
func xfsGeometry(f *os.File) (xfsGeomV1, error) {
	var g xfsGeomV1
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), xfsFSGeometryV1, uintptr(unsafe.Pointer(&g)))
	runtime.KeepAlive(f)
	if errno != 0 {
		return g, fmt.Errorf("xfs geometry of %s: %w", f.Name(), errno)
	}
	return g, nil
}

// ClonePoolSize returns the size of the data section of the clone pool
// mounted at mnt: the size it was made or last grown to (a statfs counts
// less, its log and reserves left out).
func ClonePoolSize(mnt string) (int64, error) {
	f, err := os.Open(mnt)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	g, err := xfsGeometry(f)
	if err != nil {
		return 0, err
	}
	return int64(g.datablocks) * int64(g.blocksize), nil
}

// GrowClonePool grows the clone pool mounted at mnt, whose image is img,
// to ClonePoolTarget of the host filesystem img is on, when that is at
// least ClonePoolGrowStep more than the pool has. It returns the pool's
// size before and after (equal when it did not grow). The image stays
// sparse: growing costs a truncate, two ioctls and XFS's log write of its
// new allocation groups, whatever the growth.
func GrowClonePool(img, mnt string) (before, after int64, err error) {
	root, err := os.Open(mnt)
	if err != nil {
		return 0, 0, fmt.Errorf("grow clone pool: %w", err)
	}
	defer root.Close()
	g, err := xfsGeometry(root)
	if err != nil {
		return 0, 0, fmt.Errorf("grow clone pool: %w", err)
	}
	bs := int64(g.blocksize)
	before = int64(g.datablocks) * bs
	target, err := ClonePoolTarget(filepath.Dir(img))
	if err != nil {
		return before, before, fmt.Errorf("grow clone pool: %w", err)
	}
	target -= target % bs
	if target-before < ClonePoolGrowStep {
		return before, before, nil
	}
	loop, err := poolLoop(root)
	if err != nil {
		return before, before, fmt.Errorf("grow clone pool: %w", err)
	}
	defer loop.Close()
	// The image first, then the device: the loop device reads the
	// backing file's size when told its capacity changed.
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return before, before, fmt.Errorf("grow clone pool: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return before, before, fmt.Errorf("grow clone pool: %w", err)
	} else if fi.Size() < target {
		if err := f.Truncate(target); err != nil {
			return before, before, fmt.Errorf("grow clone pool image to %d bytes: %w", target, err)
		}
	}
	if err := unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return before, before, fmt.Errorf("grow clone pool: set the capacity of %s: %w", loop.Name(), err)
	}
	in := &xfsGrowfsData{newblocks: uint64(target / bs), imaxpct: g.imaxpct}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, root.Fd(), xfsGrowFSData, uintptr(unsafe.Pointer(in)))
	runtime.KeepAlive(in)
	if errno != 0 {
		return before, before, fmt.Errorf("grow clone pool's xfs to %d bytes: %w", target, errno)
	}
	if g, err = xfsGeometry(root); err != nil {
		return before, before, fmt.Errorf("grow clone pool: %w", err)
	}
	return before, int64(g.datablocks) * bs, nil
}

// poolLoop opens the loop device the filesystem of root is mounted from.
func poolLoop(root *os.File) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &st); err != nil {
		return nil, err
	}
	uevent, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/uevent", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return nil, fmt.Errorf("find the device of %s: %w", root.Name(), err)
	}
	var name string
	for line := range strings.Lines(string(uevent)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DEVNAME="); ok {
			name = v
		}
	}
	if !strings.HasPrefix(name, "loop") {
		return nil, fmt.Errorf("%s is mounted from %q, not a loop device", root.Name(), name)
	}
	dev, err := os.OpenFile("/dev/"+name, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var dst unix.Stat_t
	if err := unix.Fstat(int(dev.Fd()), &dst); err != nil || dst.Rdev != st.Dev {
		dev.Close()
		return nil, errors.Join(fmt.Errorf("/dev/%s is not the device %s is mounted from", name, root.Name()), err)
	}
	return dev, nil
}

// SetLoopCapacity tells the loop device of the filesystem mounted at mnt
// that its backing file's size changed, and returns the device's path
// (for a resize2fs of a host filesystem grown under a test).
func SetLoopCapacity(mnt string) (string, error) {
	root, err := os.Open(mnt)
	if err != nil {
		return "", err
	}
	defer root.Close()
	loop, err := poolLoop(root)
	if err != nil {
		return "", err
	}
	defer loop.Close()
	if err := unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return "", fmt.Errorf("set the capacity of %s: %w", loop.Name(), err)
	}
	return loop.Name(), nil
}
