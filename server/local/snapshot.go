//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/internal/keylock"
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/local/snapstore"
	"github.com/boxkite/boxkite/server/model"
)

// Snapshots (issue 22). A snapshot is a copy of the sandbox's disk image,
// taken with its processes frozen (the freezer cgroup) and its ext4
// frozen (FIFREEZE, which flushes the journal), so the copy is a clean
// filesystem as of one instant. On the clone pool the copy is a FICLONE:
// no data is copied, and sandbox and snapshot share every block until one
// of them writes it. The images are kept in StateDir/snapshots, content
// addressed, by server/local/snapstore.

var _ model.SnapshotDriver = (*Driver)(nil)

// The ioctls of linux/fs.h that freeze and thaw a filesystem:
// _IOWR('X', 119, int) and _IOWR('X', 120, int).
const (
	fiFreeze = 0xc0045877
	fiThaw   = 0xc0045878
)

// ErrNoSnapshots is returned for sandboxes whose workspace is a tmpfs.
var ErrNoSnapshots = errors.New("snapshots need loop-mounted disks (the workspace here is a tmpfs in memory)")

// snaps is the driver's snapshot store, in its data root (which the
// clone pool's mount may change while New runs).
func (d *Driver) snaps() snapstore.Store { return snapstore.New(d.snapshotsDir()) }

func (d *Driver) snapshotsDir() string { return filepath.Join(d.data, "snapshots") }

func (d *Driver) snapshotPath(key string) string { return d.snaps().Path(key) }

// Snapshot implements model.SnapshotDriver.
func (d *Driver) Snapshot(_ context.Context, id string, transient bool, claim func(string) error) (model.SnapshotRef, error) {
	if !validID.MatchString(id) {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox: invalid id %q", id)
	}
	if d.storage != StorageLoop {
		return model.SnapshotRef{}, ErrNoSnapshots
	}
	part, cloned, mounts, err := d.copyFrozen(id)
	if err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	ref := model.SnapshotRef{Method: "copy", MountPoints: mounts}
	if cloned {
		ref.Method = "reflink"
	}
	if ref.Key, ref.SizeBytes, err = snapstore.Seal(part, transient, cloned); err != nil {
		_ = os.Remove(part)
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	if claim != nil && !transient {
		// From here until the row is deleted, no drop deletes final.
		if err := claim(ref.Key); err != nil {
			_ = os.Remove(part)
			return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: claim its key: %w", id, err)
		}
	}
	if err := d.snaps().Put(part, ref.Key, transient); err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	return ref, nil
}

// copyFrozen copies sandbox id's disk image to a new part file in the
// snapshot store, its processes and filesystem frozen for the copy, and
// returns the part file, whether the copy is a clone, and where the
// sandbox mounts volumes (mountPoints).
func (d *Driver) copyFrozen(id string) (part string, cloned bool, mounts []string, err error) {
	// One at a time per sandbox: a second FIFREEZE of a frozen
	// filesystem fails (EBUSY), and the first one's thaw would end the
	// second one's freeze in the middle of its copy.
	defer d.snapLocks.Lock(id)()
	dir := d.sandboxDir(id)
	st, err := readState(dir)
	if err != nil {
		return "", false, nil, err
	}
	// Processes first: frozen, they are stopped between two system calls
	// and the filesystem holds whatever they wrote as of one instant.
	if st.Paused == "" && !st.Cgroup.Frozen() && st.Cgroup.CanFreeze() {
		if err := st.Cgroup.Freeze(true); err != nil {
			return "", false, nil, err
		}
		defer func() {
			if !d.frozen.has(id) {
				_ = st.Cgroup.Freeze(false)
			}
		}()
	}
	mnt, err := os.OpenFile(filepath.Join(dir, diskMount), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, nil, err
	}
	defer mnt.Close()
	// FIFREEZE writes the journal back and blocks new writes: the image
	// is a clean filesystem until FITHAW.
	if err := unix.IoctlSetInt(int(mnt.Fd()), fiFreeze, 0); err != nil {
		return "", false, nil, fmt.Errorf("freeze filesystem: %w", err)
	}
	defer func() { _ = unix.IoctlSetInt(int(mnt.Fd()), fiThaw, 0) }()
	if part, err = d.snaps().NewPart(); err != nil {
		return "", false, nil, err
	}
	cloned, err = loopdisk.CloneFile(part, filepath.Join(dir, diskImage))
	if err != nil {
		_ = os.Remove(part)
		return "", false, nil, err
	}
	return part, cloned, mountPoints(&st), nil
}

// thawDisk thaws the filesystem of the sandbox or pool member in dir if a
// snapshot left it frozen, and reports whether it was. A freeze outlives
// the process that asked for it: a server killed between FIFREEZE and
// FITHAW leaves the disk frozen, every writer blocked in the kernel where
// no signal reaches it, until something thaws it.
func (d *Driver) thawDisk(dir string) bool {
	// Only a disk of its own: the directory's parent filesystem is the
	// host's.
	if ok, err := loopdisk.IsMountPoint(filepath.Join(dir, diskMount)); err != nil || !ok {
		return false
	}
	mnt, err := os.OpenFile(filepath.Join(dir, diskMount), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer mnt.Close()
	// EINVAL: not frozen, the usual case.
	return unix.IoctlSetInt(int(mnt.Fd()), fiThaw, 0) == nil
}

// thawInterruptedSnapshot undoes what a snapshot a crash interrupted left
// of sandbox id (New calls it for the sandboxes it adopts): its frozen
// filesystem, and its frozen cgroup unless the sandbox is paused. A
// cgroup frozen without a frozen filesystem is left to adoptFrozen: the
// storage watch's freeze looks the same.
func (d *Driver) thawInterruptedSnapshot(id string) {
	dir := d.sandboxDir(id)
	if !d.thawDisk(dir) {
		return
	}
	d.log.Warn("thawed the disk of a snapshot a restart interrupted", "id", id)
	if st, err := readState(dir); err == nil && st.Paused == "" && st.Cgroup.Frozen() {
		if err := st.Cgroup.Freeze(false); err != nil {
			d.log.Warn("thaw sandbox of an interrupted snapshot", "id", id, "err", err)
		}
	}
}

// idLocks is a mutex per id, held while in use.
type idLocks = keylock.Locks[string]

// snapshotTrimDelay is how long after a snapshot's unlink the clone pool
// is trimmed to give its blocks back (see loopdisk.RemoveNow).
const snapshotTrimDelay = time.Second

// DeleteSnapshot implements model.SnapshotDriver. A missing key is not an
// error.
func (d *Driver) DeleteSnapshot(_ context.Context, key string) error {
	if err := d.snaps().Delete(key); err != nil {
		return err
	}
	if d.images != nil && d.images.Pool() != nil {
		// XFS frees its blocks moments later, once the last reader let go.
		time.AfterFunc(snapshotTrimDelay, d.images.Pool().Trim)
	}
	return nil
}

// restoreDisk makes dst, a new sandbox's disk image, a copy of snapshot key.
func (d *Driver) restoreDisk(dst, key string) error { return d.snaps().Restore(dst, key) }

var _ model.SnapshotLister = (*Driver)(nil)

// SnapshotKeys implements model.SnapshotLister: the sha256-<hex>.img
// images of the snapshot store (not the transient tmp- ones of forks, not
// the .part- copies under way).
func (d *Driver) SnapshotKeys(context.Context) ([]string, error) { return d.snaps().Keys() }

// emptySnapshotTrash removes copies a crash interrupted and the transient
// snapshots of forks it interrupted (New).
func (d *Driver) emptySnapshotTrash() { d.snaps().EmptyTrash() }
