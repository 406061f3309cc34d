//go:build linux

package local

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/internal/keylock"
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
)

// Snapshots (issue 22). A snapshot is a copy of the sandbox's disk image,
// taken with its processes frozen (the freezer cgroup) and its ext4
// frozen (FIFREEZE, which flushes the journal), so the copy is a clean
// filesystem as of one instant. On the clone pool the copy is a FICLONE:
// no data is copied, and sandbox and snapshot share every block until one
// of them writes it. The store is content-addressed, so two snapshots of
// the same state share one file: a clone's key is the SHA-256 of its
// extent map (hashExtents: equal maps share every block, so they hold
// equal data), a copy's the SHA-256 of its data runs with their offsets
// (loopdisk.HashData). Transient snapshots (for forks) skip the hash.
//
//	snapshots/sha256-<hex>.img  a snapshot's image, read-only from here on
//	snapshots/tmp-<hex>.img     a fork's transient image
//	snapshots/.part-<hex>.img   a copy under way; a crash leaves it to the next New to remove

var _ model.SnapshotDriver = (*Driver)(nil)

// validSnapshotKey is what a key may look like: it names a file.
var validSnapshotKey = regexp.MustCompile(`^(sha256-[0-9a-f]{64}|tmp-[0-9a-f]{32})$`)

// The ioctls of linux/fs.h that freeze and thaw a filesystem:
// _IOWR('X', 119, int) and _IOWR('X', 120, int).
const (
	fiFreeze = 0xc0045877
	fiThaw   = 0xc0045878
)

// ErrNoSnapshots is returned for sandboxes whose workspace is a tmpfs.
var ErrNoSnapshots = errors.New("snapshots need loop-mounted disks (the workspace here is a tmpfs in memory)")

func (d *Driver) snapshotsDir() string { return filepath.Join(d.data, "snapshots") }

func (d *Driver) snapshotPath(key string) string {
	return filepath.Join(d.snapshotsDir(), key+".img")
}

// Snapshot implements model.SnapshotDriver.
func (d *Driver) Snapshot(_ context.Context, id string, transient bool, claim func(string) error) (model.SnapshotRef, error) {
	if !validID.MatchString(id) {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox: invalid id %q", id)
	}
	if d.storage != StorageLoop {
		return model.SnapshotRef{}, ErrNoSnapshots
	}
	if err := os.MkdirAll(d.snapshotsDir(), 0o700); err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	part, cloned, mounts, err := d.copyFrozen(id)
	if err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	ref := model.SnapshotRef{Method: "copy", MountPoints: mounts}
	if cloned {
		ref.Method = "reflink"
	}
	if err := seal(part, transient, &ref); err != nil {
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
	final := d.snapshotPath(ref.Key)
	if !transient && exists(final) {
		_ = os.Remove(part) // the same state is stored already
	} else if err := os.Rename(part, final); err != nil {
		_ = os.Remove(part)
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	if err := syncDir(d.snapshotsDir()); err != nil {
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
	part = filepath.Join(d.snapshotsDir(), ".part-"+randHex(16)+".img")
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

// seal makes part durable and fills ref's key and size: the content
// address of its data, or a random key when transient.
func seal(part string, transient bool, ref *model.SnapshotRef) error {
	f, err := os.Open(part)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	if transient {
		ref.Key = "tmp-" + randHex(16)
		ref.SizeBytes = allocated(part)
		return nil
	}
	var sum []byte
	var n int64
	if ref.Method == "reflink" {
		sum, n, err = hashExtents(f)
	} else {
		sum, n, err = loopdisk.HashData(f)
	}
	if err != nil {
		return err
	}
	ref.Key, ref.SizeBytes = "sha256-"+hex.EncodeToString(sum), n
	return nil
}

// FS_IOC_FIEMAP and its flags (linux/fiemap.h).
const (
	fsIocFiemap     = 0xc020660b
	fiemapFlagSync  = 0x1
	fiemapExtLast   = 0x1
	fiemapHeaderLen = 32
	fiemapExtentLen = 56
	fiemapBatch     = 512
)

// hashExtents hashes the extent map of a reflinked image: each extent's
// logical offset, physical block address and length, and the file's
// size. It reads no data, so it costs the same for 1 MiB as for 1 GiB.
// Two images with equal hashes share every block, and a shared block is
// copy-on-write, so equal keys still mean equal content (the converse does
// not hold: identical data written twice is not deduplicated).
func hashExtents(f *os.File) ([]byte, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	buf := make([]byte, fiemapHeaderLen+fiemapBatch*fiemapExtentLen)
	var rec [24]byte
	var n int64
	for start := uint64(0); start < uint64(fi.Size()); {
		clear(buf)
		binary.NativeEndian.PutUint64(buf[0:], start)
		binary.NativeEndian.PutUint64(buf[8:], uint64(fi.Size())-start)
		binary.NativeEndian.PutUint32(buf[16:], fiemapFlagSync)
		binary.NativeEndian.PutUint32(buf[24:], fiemapBatch)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
			return nil, 0, fmt.Errorf("map extents: %w", errno)
		}
		mapped := binary.NativeEndian.Uint32(buf[20:])
		if mapped == 0 {
			break
		}
		last := false
		for i := range mapped {
			e := buf[fiemapHeaderLen+int(i)*fiemapExtentLen:]
			logical, physical, length := binary.NativeEndian.Uint64(e[0:]), binary.NativeEndian.Uint64(e[8:]), binary.NativeEndian.Uint64(e[16:])
			binary.BigEndian.PutUint64(rec[0:], logical)
			binary.BigEndian.PutUint64(rec[8:], physical)
			binary.BigEndian.PutUint64(rec[16:], length)
			h.Write(rec[:])
			n += int64(length)
			start = logical + length
			last = binary.NativeEndian.Uint32(e[40:])&fiemapExtLast != 0
		}
		if last {
			break
		}
	}
	binary.BigEndian.PutUint64(rec[:8], uint64(fi.Size()))
	h.Write(rec[:8])
	return h.Sum(nil), n, nil
}

// snapshotTrimDelay is how long after a snapshot's unlink the clone pool
// is trimmed to give its blocks back (see loopdisk.RemoveNow).
const snapshotTrimDelay = time.Second

// DeleteSnapshot implements model.SnapshotDriver. A missing key is not an
// error.
func (d *Driver) DeleteSnapshot(_ context.Context, key string) error {
	if !validSnapshotKey.MatchString(key) {
		return fmt.Errorf("delete snapshot: invalid key %q", key)
	}
	// Unlinked, not truncated: a restore or fork may be cloning it.
	err := os.Remove(d.snapshotPath(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	if d.images != nil && d.images.Pool() != nil {
		// XFS frees its blocks moments later, once the last reader let go.
		time.AfterFunc(snapshotTrimDelay, d.images.Pool().Trim)
	}
	return nil
}

// restoreDisk makes dst, a new sandbox's disk image, a copy of snapshot key.
func (d *Driver) restoreDisk(dst, key string) error {
	if !validSnapshotKey.MatchString(key) {
		return fmt.Errorf("restore snapshot: invalid key %q", key)
	}
	if _, err := loopdisk.CloneFile(dst, d.snapshotPath(key)); err != nil {
		return fmt.Errorf("restore snapshot %s: %w", key, err)
	}
	return nil
}

var _ model.SnapshotLister = (*Driver)(nil)

// SnapshotKeys implements model.SnapshotLister: the sha256-<hex>.img
// images of the snapshot store (not the transient tmp- ones of forks, not
// the .part- copies under way).
func (d *Driver) SnapshotKeys(context.Context) ([]string, error) {
	entries, err := os.ReadDir(d.snapshotsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var keys []string
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".img")
		if ok && e.Type().IsRegular() && strings.HasPrefix(key, "sha256-") && validSnapshotKey.MatchString(key) {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// emptySnapshotTrash removes copies a crash interrupted and the transient
// snapshots of forks it interrupted (New).
func (d *Driver) emptySnapshotTrash() {
	entries, _ := os.ReadDir(d.snapshotsDir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".part-") || strings.HasPrefix(e.Name(), "tmp-") {
			_ = os.Remove(filepath.Join(d.snapshotsDir(), e.Name()))
		}
	}
}

// randHex returns n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
