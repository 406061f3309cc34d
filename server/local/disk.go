package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Storage quota mechanisms (Config.Storage).
const (
	StorageAuto  = ""      // loop when possible (root, /dev/loop-control, mkfs.ext4), else tmpfs
	StorageLoop  = "loop"  // an ext4 image per sandbox, loop-mounted on the host
	StorageTmpfs = "tmpfs" // a size-limited tmpfs inside the jail (memory, not disk)
)

// Files of a sandbox with a loop-mounted disk, in its directory.
const (
	diskImage = "disk.img" // sparse ext4 image of the quota's size
	diskMount = "disk"     // its mount point; holds workspace/ and outputs/
)

// loopAvailable reports why loop-mounted quotas cannot work here, or "".
func loopAvailable(root bool) string {
	switch {
	case !root:
		return "not running as root"
	case !exists("/dev/loop-control"):
		return "no /dev/loop-control"
	}
	if mkfsPath() == "" {
		return "mkfs.ext4 not found (install e2fsprogs)"
	}
	return ""
}

// mkfsPath finds mkfs.ext4 on PATH, then in the sbin directories a user's
// PATH often lacks; "" when there is none.
func mkfsPath() string {
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

// images makes quota images from one formatted template per size, so a
// Create clones it (or, without the clone pool, copies a few megabytes of
// metadata) instead of running mkfs.
type images struct {
	dir  string    // images/ of the driver's data directory (StateDir, or the clone pool)
	trim *poolTrim // the clone pool's, nil without one
	mu   sync.Mutex
}

// trashPrefix names images waiting in images/ to be unlinked.
const trashPrefix = ".trash-"

// discard moves a sandbox's image out of its directory and unlinks it in
// the background: freeing a multi-GiB sparse file takes the host's
// filesystem tens of milliseconds that Delete need not wait for. An image
// left by a crash is unlinked by the next driver (see emptyTrash).
func (im *images) discard(image string) error {
	if _, err := os.Lstat(image); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(im.dir, 0o700); err != nil {
		return fmt.Errorf("discard disk image: %w", err)
	}
	trash, err := os.CreateTemp(im.dir, trashPrefix)
	if err != nil {
		return fmt.Errorf("discard disk image: %w", err)
	}
	_ = trash.Close()
	if err := os.Rename(image, trash.Name()); err != nil {
		_ = os.Remove(trash.Name())
		if !errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("discard disk image: %w", err)
		}
		// A volume's image lives on the host's filesystem, the trash
		// in the clone pool: unlinked where it is.
		if err := os.Remove(image); err != nil {
			return fmt.Errorf("discard disk image: %w", err)
		}
		return nil
	}
	go func() {
		if im.trim == nil {
			_ = os.Remove(trash.Name())
			return
		}
		if !loopReleased(trash.Name(), releaseBudget) {
			im.trim.log.Warn("a discarded disk image is still attached to a loop device: its space returns to the host at a later trim", "image", trash.Name())
			_ = os.Remove(trash.Name())
			return
		}
		_ = removeNow(trash.Name())
		im.trim.trim()
	}()
	return nil
}

// removeNow unlinks the file at path with its blocks freed before it
// returns: XFS frees an unlinked file's blocks moments later in the
// background (inode inactivation), too late for the trim that follows,
// while a truncate frees them at once.
func removeNow(path string) error {
	if err := os.Truncate(path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Remove(path)
}

// releaseBudget is how long a discarded image's loop device is waited
// for: autoclear detaches it in the background once its filesystem is
// unmounted everywhere, and the image's blocks are freed only then.
const releaseBudget = 10 * time.Second

// loopReleased waits, up to budget, until no loop device is backed by
// the file at path, and reports whether none is.
func loopReleased(path string, budget time.Duration) bool {
	// The kernel names the backing file by its absolute, resolved path.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	deadline := time.Now().Add(budget)
	for {
		files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
		held := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			held = held || (err == nil && strings.TrimSpace(string(b)) == path)
		}
		if !held {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// templatePrefix names the formatted templates in images/, by size.
// Templates of earlier versions ("ext4-<size>.img") had no journal; they
// are thrown away (emptyTrash).
const templatePrefix = "ext4j-"

// emptyTrash unlinks, in the background, images a previous driver
// discarded but did not get to unlink, and journal-less templates of
// earlier versions.
func (im *images) emptyTrash() {
	old, _ := filepath.Glob(filepath.Join(im.dir, trashPrefix+"*"))
	stale, _ := filepath.Glob(filepath.Join(im.dir, "ext4-[0-9]*.img"))
	old = append(old, stale...)
	if len(old) == 0 {
		return
	}
	go func() {
		for _, p := range old {
			_ = os.Remove(p)
		}
		im.trim.trim()
	}()
}

// create writes a new sparse ext4 image of size bytes at dst.
func (im *images) create(dst string, size int64) error {
	tmpl, err := im.template(size)
	if err != nil {
		return err
	}
	if _, err := cloneFile(dst, tmpl); err != nil {
		return fmt.Errorf("create disk image: %w", err)
	}
	return nil
}

// template returns the path of the formatted image of size bytes, making
// it on first use.
func (im *images) template(size int64) (string, error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	path := filepath.Join(im.dir, templatePrefix+strconv.FormatInt(size, 10)+".img")
	if exists(path) {
		return path, nil
	}
	if err := os.MkdirAll(im.dir, 0o700); err != nil {
		return "", fmt.Errorf("create disk template: %w", err)
	}
	tmp := path + ".tmp"
	if err := formatImage(tmp, size); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("create disk template: %w", err)
	}
	return path, nil
}

func formatImage(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		return fmt.Errorf("create disk template: %w", err)
	}
	// A journal, so that a write the host could not store (its filesystem
	// filled under the sparse image) aborts the journal and leaves the
	// filesystem read-only and consistent (errors=remount-ro at mount)
	// instead of corrupt; it is small, since the journal's blocks become
	// real host blocks as it is used. No reserved blocks, and no inode
	// table or journal zeroing, since a new sparse file reads as zeros;
	// e2fsprogs before 1.47 lacks assume_storage_prezeroed.
	journal := []string{}
	if size >= 256<<20 {
		journal = []string{"-J", "size=" + strconv.Itoa(journalMiB)}
	}
	var out []byte
	for _, ext := range []string{
		"nodiscard,lazy_itable_init=1,lazy_journal_init=1,assume_storage_prezeroed=1",
		"nodiscard,lazy_itable_init=1,lazy_journal_init=1",
	} {
		args := append([]string{"-q", "-F", "-m", "0", "-O", "has_journal", "-E", ext}, journal...)
		args = append(args, path)
		if out, err = exec.Command(mkfsPath(), args...).CombinedOutput(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("format disk template: %w: %s", err, out)
}

// copySparse copies src's data extents to a new file dst of size bytes,
// leaving holes as holes.
func copySparse(dst, src string, size int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	if err := out.Truncate(size); err != nil {
		return err
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := copyRange(out, in, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

func copyRange(out, in *os.File, off, n int64) error {
	for n > 0 {
		roff, woff := off, off
		c, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(n, 1<<30)), 0)
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			_, err = io.Copy(io.NewOffsetWriter(out, off), io.NewSectionReader(in, off, n))
			return err
		}
		if err != nil {
			return err
		}
		if c == 0 {
			return io.ErrUnexpectedEOF
		}
		off, n = off+int64(c), n-int64(c)
	}
	return nil
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

// mountDisk attaches image to a free loop device and mounts it at target.
// The device is auto-clearing: it detaches itself once the filesystem is
// unmounted everywhere, the jail's copies of the mount included.
//
// An image still attached to a loop device (its filesystem lives on in a
// mount namespace that copied it, see holders.go) is mounted from that
// device: a second device would make a second ext4 instance of the same
// image, and two instances writing one image corrupt it.
func mountDisk(image, target string) error { return mountImage(image, target, false) }

// mountNewDisk is mountDisk for an image made just now (a sandbox's new,
// restored or forked disk), which no loop device can hold yet: it skips
// looking for one, a read of every loop device's backing file that was
// most of the driver's CPU in a cold create (issue 27).
func mountNewDisk(image, target string) error { return mountImage(image, target, true) }

func mountImage(image, target string, fresh bool) error {
	img, err := os.OpenFile(image, os.O_RDWR, 0)
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
	// Another process may take the device LOOP_CTL_GET_FREE names before
	// we configure it; then ask again.
	for range 16 {
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
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("configure %s: %w", dev.Name(), err)
		}
	}
	return nil, errors.New("configure loop device: every free device was taken first")
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

// unmountDisk detaches the disk mounted at target, if any. The filesystem
// and its loop device go once the jail's copies of the mount are gone too.
func unmountDisk(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // unmounted, or not a mount point
	}
	return fmt.Errorf("unmount disk: %w", err)
}
