package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The clone pool (issue 22, docs/snapshots.md). Sandbox disks are ext4
// images; copying one (a snapshot, a fork, a new disk from the template)
// is a FICLONE when the images live on a filesystem with reflinks. The
// host's own is often ext4, so the driver keeps its sandboxes, warm pool,
// templates and snapshots on one loop-mounted XFS with reflink=1: a
// sparse file, StateDir/cow.img, the size of the host filesystem (so it
// never fills before the host does, and the host's free-space watermark
// keeps working), mounted at StateDir/cow. Without it every copy is a
// real copy of the image's data.

// Clone modes (Config.Clones).
const (
	ClonesOff  = ""     // images are copied (the zero value, for tests and hosts without xfsprogs)
	ClonesAuto = "auto" // the XFS pool when possible (root, loop devices, mkfs.xfs), else copies
	ClonesXFS  = "xfs"  // the XFS pool, or New fails
)

// Files of the clone pool in StateDir.
const (
	cowImage = "cow.img" // the sparse XFS image
	cowMount = "cow"     // its mount point: sandboxes/, pool/, images/, snapshots/
)

// mkfsXFSPath finds mkfs.xfs like mkfsPath finds mkfs.ext4.
func mkfsXFSPath() string {
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

// clonesAvailable says why the XFS pool cannot work here, or "".
func (d *Driver) clonesAvailable() string {
	if why := loopAvailable(d.root); why != "" {
		return why
	}
	if mkfsXFSPath() == "" {
		return "mkfs.xfs not found (install xfsprogs)"
	}
	return ""
}

// chooseClones settles Config.Clones and, for the pool, mounts it: d.data
// becomes its mount point.
func (d *Driver) chooseClones() error {
	d.data = d.cfg.StateDir
	switch d.cfg.Clones {
	case ClonesOff:
		return nil
	case ClonesAuto, ClonesXFS:
	default:
		return fmt.Errorf("unknown clones mode %q", d.cfg.Clones)
	}
	why := d.clonesAvailable()
	if why == "" && d.storage != StorageLoop {
		why = "sandbox disks are not loop-mounted images"
	}
	if why == "" && d.cfg.Clones == ClonesAuto && !exists(filepath.Join(d.cfg.StateDir, cowImage)) && hasSandboxes(filepath.Join(d.cfg.StateDir, "sandboxes")) {
		// Sandboxes made before the pool live outside it; a server that
		// moved would lose them. A fresh state directory gets the pool.
		why = "the state directory has sandboxes from before the clone pool"
	}
	if why != "" {
		if d.cfg.Clones == ClonesXFS {
			return fmt.Errorf("clone pool: %s", why)
		}
		d.log.Info("sandbox disks are copied, not cloned: snapshots and forks copy their data", "why", why)
		return nil
	}
	mnt, err := mountClonePool(d.cfg.StateDir)
	if err != nil {
		if d.cfg.Clones == ClonesXFS {
			return err
		}
		d.log.Warn("sandbox disks are copied, not cloned", "err", err)
		return nil
	}
	d.data = mnt
	return nil
}

// hasSandboxes reports whether dir holds any sandbox directory.
func hasSandboxes(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && validID.MatchString(e.Name()) {
			return true
		}
	}
	return false
}

// mountClonePool mounts StateDir/cow.img at StateDir/cow, making the image
// first if there is none, and returns the mount point. A pool a previous
// driver mounted is used as it is.
func mountClonePool(stateDir string) (string, error) {
	img, mnt := filepath.Join(stateDir, cowImage), filepath.Join(stateDir, cowMount)
	if ok, _ := isMountPoint(mnt); ok {
		return mnt, nil
	}
	if !exists(img) {
		if err := formatClonePool(stateDir, img); err != nil {
			return "", err
		}
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("mount clone pool: %w", err)
	}
	defer f.Close()
	loop, err := attachLoop(f)
	if err != nil {
		return "", fmt.Errorf("mount clone pool: %w", err)
	}
	defer loop.Close()
	if err := os.Mkdir(mnt, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("mount clone pool: %w", err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME)
	if err := unix.Mount(loop.Name(), mnt, "xfs", flags, ""); err != nil {
		return "", fmt.Errorf("mount clone pool %s on %s: %w", loop.Name(), mnt, err)
	}
	if err := os.Chmod(mnt, 0o700); err != nil {
		return "", fmt.Errorf("mount clone pool: %w", err)
	}
	return mnt, nil
}

// formatClonePool makes the pool's sparse image, the size of the host
// filesystem under stateDir, and formats it as XFS with reflinks.
func formatClonePool(stateDir, img string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(stateDir, &st); err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	size := max(int64(st.Blocks)*st.Bsize, 1<<30)
	tmp := img + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	// A small log: its blocks become real host blocks at once.
	out, err := exec.Command(mkfsXFSPath(), "-q", "-f", "-K", "-m", "reflink=1", "-l", "size=64m", tmp).CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("format clone pool: %w: %s", err, out)
	}
	if err := os.Rename(tmp, img); err != nil {
		return fmt.Errorf("create clone pool: %w", err)
	}
	return nil
}

// cloneFile makes dst a copy of src: a reflink (FICLONE) where the
// filesystem has them, else a sparse copy. It reports whether it cloned.
func cloneFile(dst, src string) (cloned bool, err error) {
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	err = unix.IoctlFileClone(int(out.Fd()), int(in.Fd()))
	if err == nil {
		return true, out.Close()
	}
	_ = out.Close()
	_ = os.Remove(dst)
	if !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return false, fmt.Errorf("clone %s: %w", src, err)
	}
	fi, err := in.Stat()
	if err != nil {
		return false, err
	}
	return false, copySparse(dst, src, fi.Size())
}

// allocated returns the bytes of host storage path's blocks take.
func allocated(path string) int64 {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0
	}
	return st.Blocks * 512
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// unmountClonePool detaches the clone pool's mount (Shutdown): its
// snapshots stay in the image for the next driver, which mounts it again.
// The filesystem goes once the last sandbox disk in it is unmounted.
func (d *Driver) unmountClonePool() error {
	if d.data == d.cfg.StateDir {
		return nil
	}
	return unmountDisk(d.data)
}
