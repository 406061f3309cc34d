//go:build linux

package loopdisk

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LoopAvailable reports why loop-mounted quotas cannot work here, or "".
func LoopAvailable(root bool) string {
	switch {
	case !root:
		return "not running as root"
	case !exists("/dev/loop-control"):
		return "no /dev/loop-control"
	}
	if MkfsPath() == "" {
		return "mkfs.ext4 not found (install e2fsprogs)"
	}
	return ""
}

// MkfsPath finds mkfs.ext4 on PATH, then in the sbin directories a user's
// PATH often lacks; "" when there is none.
func MkfsPath() string {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// MkfsXFSPath finds mkfs.xfs like MkfsPath finds mkfs.ext4.
func MkfsXFSPath() string {
	if p, err := exec.LookPath("mkfs.xfs"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// journalMiB is the journal size of images of 256 MiB and more (smaller
// ones get mkfs's default, a few MiB): big enough for a sandbox's metadata
// churn, small enough that thousands of sandboxes' journals do not fill
// the host.
const journalMiB = 16

// diskMountOptions are the ext4 options of sandbox disks and volumes: an
// I/O error (the host could not grow the image) makes the filesystem
// read-only rather than carry on writing around the hole.
const diskMountOptions = "errors=remount-ro"

// Mount attaches image to a free loop device and mounts it at target.
// The device is auto-clearing: it detaches itself once the filesystem is
// unmounted everywhere, the jail's copies of the mount included.
//
// An image still attached to a loop device (its filesystem lives on in a
// mount namespace that copied it, held by another mount namespace) is mounted from that
// device: a second device would make a second ext4 instance of the same
// image, and two instances writing one image corrupt it.
func Mount(image, target string) error { return mountImage(image, target, false) }

// MountNew is Mount for an image made just now (a sandbox's new,
// restored or forked disk), which no loop device can hold yet: it skips
// looking for one, a read of every loop device's backing file that was
// most of the driver's CPU in a cold create (issue 27).
func MountNew(image, target string) error { return mountImage(image, target, true) }

func mountImage(image, target string, fresh bool) error {
	img, err := openImage(image)
	if err != nil {
		return fmt.Errorf("mount disk: %w", err)
	}
	defer img.Close()
	var loop *os.File
	if !fresh {
		loop, err = attachedLoop(img)
	}
	if err == nil && loop == nil {
		loop, err = attachLoop(img)
	}
	if err != nil {
		return fmt.Errorf("mount disk: %w", err)
	}
	// Closed only after the mount holds the device, or autoclear would
	// detach it first.
	defer loop.Close()
	if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mount disk: %w", err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME)
	if err := unix.Mount(loop.Name(), target, "ext4", flags, diskMountOptions); err != nil {
		return fmt.Errorf("mount disk %s on %s: %w", loop.Name(), target, err)
	}
	return nil
}

// attachedLoop returns, open, the loop device img is attached to, or nil.
// Holding it open keeps it from detaching (autoclear acts on the last
// close), so it can be mounted.
func attachedLoop(img *os.File) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(img.Fd()), &st); err != nil {
		return nil, err
	}
	// The kernel names the backing file by its absolute, resolved path.
	name, err := filepath.Abs(img.Name())
	if err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(name); err == nil {
		name = resolved
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		backing, err := os.ReadFile(f)
		if err != nil || strings.TrimSuffix(strings.TrimSpace(string(backing)), " (deleted)") != name {
			continue
		}
		dev, err := os.OpenFile("/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // detached meanwhile
		}
		// The name may be another file's by now: the inode tells.
		info, err := unix.IoctlLoopGetStatus64(int(dev.Fd()))
		if err == nil && info.Device == st.Dev && info.Inode == st.Ino {
			return dev, nil
		}
		dev.Close()
	}
	return nil, nil
}

// attachLoop binds img to a free loop device and returns the device open.
func attachLoop(img *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	deadline := time.Now().Add(attachBudget)
	return claimLoop(func() (*os.File, error) {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find free loop device: %w", err)
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		cfg := unix.LoopConfig{
			Fd:   uint32(img.Fd()),
			Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO},
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
			err = configureOldLoop(dev, img) // before Linux 5.8
		}
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("configure %s: %w", dev.Name(), err)
		}
		return dev, nil
	}, func(attempt int) bool {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(attachBackoff(attempt))
		return true
	})
}

// attachBudget bounds attachLoop's retries. LOOP_CTL_GET_FREE names the
// lowest free device to every process that asks, so concurrent attaches
// (creates at once, the prepared pool's refills, other servers and
// losetup on the host) all race to configure the same device: one wins
// and the rest get EBUSY and ask again, where they meet the next ones.
// Sixteen immediate tries were not enough: 48 attaches at once on two
// cores lost 9 to 22 of them ("every free device was taken first"), and a
// create that loses is a sandbox_operation_failed. Each EBUSY means
// another attach succeeded, so the host as a whole progresses; a time
// bound, as util-linux's losetup has (64 tries 200 ms apart), keeps a
// loser trying while it does.
const attachBudget = 30 * time.Second

// attachBackoff is the wait before attach retry attempt (0 is the
// first): none for the first, which usually finds the next device free,
// then a random one up to a doubling bound of at most 20 ms, so that the
// losers of one round do not all meet again on the next device.
func attachBackoff(attempt int) time.Duration {
	if attempt == 0 {
		return 0
	}
	bound := min(20*time.Millisecond, time.Millisecond<<min(attempt, 10))
	return rand.N(bound) + 1
}

// claimLoop calls try until it returns a device or an error other than
// EBUSY (a device another attach configured first); before each retry it
// calls wait with the retry's number, which returns false once no more
// retries are allowed.
func claimLoop(try func() (*os.File, error), wait func(attempt int) bool) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		dev, err := try()
		if err == nil {
			return dev, nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return nil, err
		}
		if !wait(attempt) {
			return nil, fmt.Errorf("configure loop device: every free device was taken first, %d times: %w", attempt+1, err)
		}
	}
}

func configureOldLoop(dev, img *os.File) error {
	if err := unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_SET_FD, int(img.Fd())); err != nil {
		return err
	}
	info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR}
	if err := unix.IoctlLoopSetStatus64(int(dev.Fd()), &info); err != nil {
		_ = unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_CLR_FD, 0)
		return err
	}
	return nil
}

// Unmount detaches the disk mounted at target, if any. The filesystem
// and its loop device go once the jail's copies of the mount are gone too.
func Unmount(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // unmounted, or not a mount point
	}
	return fmt.Errorf("unmount disk: %w", err)
}

// LoopDevice returns the device number of the filesystem mounted at
// target (a disk's loop device, for Images.Discard), or 0 when target is
// not a mount point.
func LoopDevice(target string) uint64 {
	var st, parent unix.Stat_t
	if unix.Stat(target, &st) != nil || unix.Stat(filepath.Dir(target), &parent) != nil || st.Dev == parent.Dev {
		return 0
	}
	return st.Dev
}

// IsMountPoint reports whether p is on another device than its parent.
func IsMountPoint(p string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return false, err
	}
	if err := unix.Stat(filepath.Dir(p), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// MountClonePool mounts the clone pool's image img (StateDir/cow.img) at
// mnt (StateDir/cow), making the image first if there is none, the size
// of the host filesystem it is on. A pool a previous driver mounted is
// used as it is. One a previous driver unmounted can still be alive,
// lazily unmounted, while anything holds a file or a mount of it (a
// sandbox disk's loop device, a mount namespace a jail copied): its loop
// device is then mounted again, which gives back that same filesystem,
// where a second device would be a second XFS of the same UUID, which
// XFS refuses (and two instances of one image would corrupt it).
func MountClonePool(img, mnt string) error {
	if ok, _ := IsMountPoint(mnt); ok {
		return nil
	}
	if !exists(img) {
		if err := formatClonePool(filepath.Dir(img), img); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mount clone pool: %w", err)
	}
	defer f.Close()
	loop, err := attachedLoop(f)
	if err == nil && loop == nil {
		loop, err = attachLoop(f)
	}
	if err != nil {
		return fmt.Errorf("mount clone pool: %w", err)
	}
	// Closed only after the mount holds the device, or autoclear would
	// detach it first.
	defer loop.Close()
	if err := os.Mkdir(mnt, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mount clone pool: %w", err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME)
	if err := unix.Mount(loop.Name(), mnt, "xfs", flags, ""); err != nil {
		return fmt.Errorf("mount clone pool %s on %s: %w", loop.Name(), mnt, err)
	}
	if err := os.Chmod(mnt, 0o700); err != nil {
		return fmt.Errorf("mount clone pool: %w", err)
	}
	return nil
}

// formatClonePool makes the pool's sparse image, the size of the host
// filesystem under stateDir, and formats it as XFS with reflinks.
func formatClonePool(stateDir, img string) error {
	size, err := ClonePoolTarget(stateDir)
	if err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	tmp := img + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	// A small log: its blocks become real host blocks at once.
	out, err := exec.Command(MkfsXFSPath(), "-q", "-f", "-K", "-m", "reflink=1", "-l", "size=64m", tmp).CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("format clone pool: %w: %s", err, out)
	}
	if err := os.Rename(tmp, img); err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	return nil
}
