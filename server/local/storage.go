//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// Storage that tells the truth (issue 19). A sandbox's disk is a sparse
// image on the host's filesystem: writes inside it succeed into the page
// cache and only meet the host's full disk later, when they are written
// back, by which time the caller was told they succeeded. So:
//
//   - before an operation that wrote is acknowledged, the server asks
//     SyncDisk, which flushes the sandbox's filesystems (syncfs) and
//     reports a write-back error as ErrInsufficientStorage (507); a file
//     write's sidecar leaves its flush to it (FlushesFiles: it runs
//     beside the write's audit entry, as an exec's), an archive's sidecar
//     syncs what it wrote and is not flushed again (server/proxy,
//     flushed), and a failed write is flushed to tell a full host from
//     another failure;
//   - the storage watch freezes running sandboxes while the host's free
//     space is below half the watermark, so they stop writing into a
//     disk that cannot take it, and thaws them once it is back above.

var (
	_ model.StorageWatcher = (*Driver)(nil)
	_ model.FileFlusher    = (*Driver)(nil)
)

// storageInterval is how often the storage watch reads the host's free space.
const storageInterval = 100 * time.Millisecond

// diskHandles keeps, per sandbox, the mount points of its writable
// filesystems open: syncfs reports a write-back error to each file
// opened before it happened, so they are opened when the sandbox is made.
type diskHandles struct {
	mu    sync.Mutex
	files map[string][]*os.File
	// broken holds the sandboxes whose disks failed to store a write:
	// more writes to them are refused (AdmitWrite).
	broken map[string]bool
	// partial holds the sandboxes with a filesystem that could not be
	// opened: SyncDisk does not flush it (FlushesFiles).
	partial map[string]bool
}

func (h *diskHandles) failed(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.broken[id]
}

// markBroken records that id's disk failed to store a write; h.mu held.
func (h *diskHandles) markBroken(id string) {
	if h.broken == nil {
		h.broken = map[string]bool{}
	}
	h.broken[id] = true
}

// setPartial records whether id has a filesystem that could not be
// opened; h.mu held.
func (h *diskHandles) setPartial(id string, partial bool) {
	if !partial {
		delete(h.partial, id)
		return
	}
	if h.partial == nil {
		h.partial = map[string]bool{}
	}
	h.partial[id] = true
}

// readOnly reports whether the filesystem of f is mounted read-only, as
// ext4 makes itself after an I/O error (errors=remount-ro).
func readOnly(f *os.File) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// openDisks opens the mount points of sandbox id's disk and volumes.
func (d *Driver) openDisks(id string) { d.openDisksIn(id, d.sandboxDir(id)) }

// openDisksIn is openDisks for the sandbox or warm pool member id whose
// directory is dir.
func (d *Driver) openDisksIn(id, dir string) {
	if d.storage != StorageLoop {
		return // tmpfs lives in memory: nothing to flush to the host
	}
	st, err := readState(dir)
	if err != nil {
		return
	}
	mounts := []string{filepath.Join(dir, diskMount)}
	for _, v := range st.Volumes {
		if validID.MatchString(v) {
			mounts = append(mounts, filepath.Join(d.volumeDir(v), volumeMount))
		}
	}
	var files []*os.File
	broken, partial := false, false
	for _, m := range mounts {
		f, err := os.OpenFile(m, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			d.log.Warn("open sandbox disk to flush it", "id", id, "mount", m, "err", err)
			partial = true
			continue
		}
		// A write-back error nobody saw yet (from before a restart) would
		// be reported to this new file at its first flush and blamed on
		// whatever runs then: take it now. A disk it made read-only
		// takes no more writes.
		err = unix.Syncfs(int(f.Fd()))
		broken = broken || readOnly(f) || errors.Is(err, unix.EROFS)
		files = append(files, f)
	}
	d.disks.mu.Lock()
	if d.disks.files == nil {
		d.disks.files = map[string][]*os.File{}
	}
	old := d.disks.files[id]
	d.disks.files[id] = files
	if broken {
		d.disks.markBroken(id)
	}
	d.disks.setPartial(id, partial)
	d.disks.mu.Unlock()
	for _, f := range old {
		f.Close()
	}
}

// moveDisks hands what openDisksIn opened for the warm pool member from
// over to the sandbox to it has become, so a claim does not pay for the
// open and its syncfs (about a millisecond, more under load): the files
// are the mount points themselves, which the claim's rename moves. It
// reports whether from had any. The files are duplicated under their
// new path, for the names in SyncDisk's errors; a duplicate shares its
// original's open file, and with it the write-back errors seen so far.
func (d *Driver) moveDisks(from, to, dir string) bool {
	d.disks.mu.Lock()
	files, ok := d.disks.files[from]
	broken := d.disks.broken[from]
	delete(d.disks.files, from)
	delete(d.disks.broken, from)
	delete(d.disks.partial, from)
	d.disks.mu.Unlock()
	if !ok || len(files) != 1 { // a member has its disk, and no volumes
		for _, f := range files {
			f.Close()
		}
		return false
	}
	fd, err := unix.FcntlInt(files[0].Fd(), unix.F_DUPFD_CLOEXEC, 0)
	files[0].Close()
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, diskMount))
	d.disks.mu.Lock()
	if d.disks.files == nil {
		d.disks.files = map[string][]*os.File{}
	}
	old := d.disks.files[to]
	d.disks.files[to] = []*os.File{f}
	if broken {
		d.disks.markBroken(to)
	}
	d.disks.setPartial(to, false)
	d.disks.mu.Unlock()
	for _, f := range old {
		f.Close()
	}
	return true
}

// closeDisks closes what openDisks opened for id.
func (d *Driver) closeDisks(id string) {
	d.disks.mu.Lock()
	files := d.disks.files[id]
	delete(d.disks.files, id)
	delete(d.disks.broken, id)
	delete(d.disks.partial, id)
	d.disks.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
}

// FlushesFiles implements model.FileFlusher: SyncDisk flushes every
// filesystem of sandbox id that keeps data (its disk and volumes, each
// opened when it was made), so the sidecar leaves a file write's flush to
// it. Not with tmpfs storage, whose volumes are host directories nothing
// here flushes.
func (d *Driver) FlushesFiles(id string) bool {
	d.disks.mu.Lock()
	defer d.disks.mu.Unlock()
	return len(d.disks.files[id]) > 0 && !d.disks.partial[id]
}

// SyncDisk implements model.DiskSyncer: it flushes the sandbox's disk
// and volumes to the host (syncfs) and reports whether everything
// written since the last call is stored. A write-back error (the host
// could not grow an image: ENOSPC, or EIO from the loop device) wraps
// model.ErrInsufficientStorage.
func (d *Driver) SyncDisk(_ context.Context, id string) error {
	d.disks.mu.Lock()
	files := d.disks.files[id]
	d.disks.mu.Unlock()
	var errs []error
	for _, f := range files {
		err := unix.Syncfs(int(f.Fd()))
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT), errors.Is(err, unix.EIO), errors.Is(err, unix.EROFS):
			// A disk that failed before and is read-only since (its
			// journal aborted: every flush says EROFS) keeps failing,
			// though nothing more can be written to it to be lost: the
			// writers see EROFS themselves.
			if d.disks.failed(id) && (readOnly(f) || errors.Is(err, unix.EROFS)) {
				continue
			}
			d.disks.mu.Lock()
			d.disks.markBroken(id)
			d.disks.mu.Unlock()
			errs = append(errs, fmt.Errorf("%w: flush %s: %w", model.ErrInsufficientStorage, f.Name(), err))
		default:
			errs = append(errs, fmt.Errorf("flush %s: %w", f.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// frozenSet is the sandboxes the storage watch froze, each with its
// cause: api.FrozenHostDisk or api.FrozenClonePool.
type frozenSet struct {
	mu  sync.Mutex
	ids map[string]string
}

func (f *frozenSet) has(id string) bool {
	return f.cause(id) != ""
}

// cause is why sandbox id is frozen, "" when it is not.
func (f *frozenSet) cause(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[id]
}

// set records sandbox id frozen for cause, or thawed when cause is "".
func (f *frozenSet) set(id, cause string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]string{}
	}
	if cause != "" {
		f.ids[id] = cause
	} else {
		delete(f.ids, id)
	}
}

func (f *frozenSet) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.ids))
	for id := range f.ids {
		out = append(out, id)
	}
	return out
}

// frozenCause is the cause a freeze records: the clone pool when pool,
// else the host's filesystem.
func frozenCause(pool bool) string {
	if pool {
		return api.FrozenClonePool
	}
	return api.FrozenHostDisk
}

// WatchStorage implements model.StorageWatcher: it reads the host's free
// space (and the clone pool's, which holds the sandboxes' disks) every
// storageInterval and freezes every running sandbox while either is below
// half its watermark, thawing them once both are back above it, and calls
// changed for each change until ctx is done. Its reading also grows the
// pool when the host has grown (cow.go).
// Sandboxes a previous driver left frozen are reported first.
func (d *Driver) WatchStorage(ctx context.Context, changed func(id string, frozen, pool bool)) error {
	for _, id := range d.frozen.list() {
		changed(id, true, d.frozen.cause(id) == api.FrozenClonePool) // left by a previous driver (adoptFrozen)
	}
	tick := time.NewTicker(storageInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		low, pool, room, err := d.diskRoom()
		if err != nil {
			return err
		}
		switch {
		case low:
			d.freezeAll(pool, changed)
		case room:
			d.thawAll(changed)
		}
	}
}

// freezeAll freezes the running sandboxes not frozen yet; pool says the
// clone pool, not the host's filesystem, ran low.
func (d *Driver) freezeAll(pool bool, changed func(id string, frozen, pool bool)) {
	obs, err := d.List(context.Background())
	if err != nil {
		d.log.Warn("freeze sandboxes: list", "err", err)
		return
	}
	for _, o := range obs {
		if !o.Alive || d.frozen.has(o.ID) {
			continue
		}
		if st, err := readState(d.sandboxDir(o.ID)); err == nil && st.Paused != "" {
			continue // paused: frozen already, and resume knows
		}
		if err := d.freeze(o.ID, frozenCause(pool)); err != nil {
			if errors.Is(err, jail.ErrNoFreezer) {
				d.log.Warn("host disk nearly full, but sandboxes cannot be frozen here (no freezer)", "id", o.ID)
			} else {
				d.log.Warn("freeze sandbox", "id", o.ID, "err", err)
			}
			continue
		}
		if pool {
			d.log.Warn("sandbox frozen: the clone pool is nearly full", "id", o.ID)
		} else {
			d.log.Warn("sandbox frozen: the host's disk is nearly full", "id", o.ID)
		}
		changed(o.ID, true, pool)
	}
}

// thawAll thaws the sandboxes the watch froze.
func (d *Driver) thawAll(changed func(id string, frozen, pool bool)) {
	for _, id := range d.frozen.list() {
		if err := d.freeze(id, ""); err != nil {
			d.log.Warn("thaw sandbox", "id", id, "err", err)
			continue
		}
		d.log.Info("sandbox thawed: the host has space again", "id", id)
		changed(id, false, false)
	}
}

// freeze freezes sandbox id's cgroup for cause, or thaws it when cause
// is "", and records it.
func (d *Driver) freeze(id, cause string) error {
	frozen := cause != ""
	st, err := readState(d.sandboxDir(id))
	if err != nil {
		return err
	}
	if len(st.Cgroup.Dirs) == 0 {
		return jail.ErrNoFreezer
	}
	// A paused sandbox stays frozen: only its resume thaws it.
	if frozen || st.Paused == "" {
		if err := st.Cgroup.Freeze(frozen); err != nil {
			return err
		}
	}
	d.frozen.set(id, cause)
	return nil
}

// adoptFrozen records sandbox id as frozen when a previous driver left its
// cgroup frozen, so the watch thaws it in time.
// A frozen cgroup does not say who froze it: a snapshot a crash
// interrupted before it froze the filesystem leaves the same. With the
// host above the watermark, where the watch's first look would thaw it,
// it is thawed at once: not answered 507 "the host ran out of disk
// space" meanwhile, nor logged as frozen and thawed for a full disk
// there never was.
func (d *Driver) adoptFrozen(id string) {
	st, err := readState(d.sandboxDir(id))
	if err != nil || st.Paused != "" || !st.Cgroup.Frozen() {
		return
	}
	_, pool, room, err := d.diskRoom()
	if err == nil && room {
		if err := st.Cgroup.Freeze(false); err == nil {
			d.log.Info("thawed an adopted sandbox: the host has space", "id", id)
			return
		}
	}
	// The cause a freeze would have now: the clone pool when it, and
	// not the host's filesystem, is below half its watermark.
	d.frozen.set(id, frozenCause(pool))
}

// diskRoom reads the host's and the clone pool's free space
// (hostcap.Host.DiskRoom): low when either is below half its watermark,
// where the storage watch freezes, room when both are at or above it,
// where it thaws.
func (d *Driver) diskRoom() (low, pool, room bool, err error) {
	h := d.capacity.Host
	if h == nil { // a driver New did not make (cleanup's)
		h = newCapacity(d).Host
	}
	return h.DiskRoom()
}

// releaseHandles closes what the driver holds open on its sandboxes'
// disks and stops watching their sidecars, as the driver's process
// exiting would (Release).
func (d *Driver) releaseHandles() {
	d.disks.mu.Lock()
	all := d.disks.files
	d.disks.files, d.disks.broken = nil, nil
	d.disks.mu.Unlock()
	for _, files := range all {
		for _, f := range files {
			f.Close()
		}
	}
	d.loss.unwatchAll()
}
