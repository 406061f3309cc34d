//go:build linux

package local

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
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

// clonesAvailable says why the XFS pool cannot work here, or "".
func (d *Driver) clonesAvailable() string {
	if why := loopdisk.LoopAvailable(d.root); why != "" {
		return why
	}
	if loopdisk.MkfsXFSPath() == "" {
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
	mnt, img := filepath.Join(d.cfg.StateDir, cowMount), filepath.Join(d.cfg.StateDir, cowImage)
	hadPool := exists(img)
	if err := loopdisk.MountClonePool(img, mnt); err != nil {
		if d.cfg.Clones == ClonesXFS {
			return err
		}
		if hadPool {
			d.log.Error("the clone pool did not mount: sandbox disks are copied, and the snapshots and paused sandboxes in the pool are out of reach until a restart mounts it", "err", err)
			return nil
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
	return loopdisk.Unmount(d.data)
}
