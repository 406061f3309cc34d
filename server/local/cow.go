//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/sidecar/jail"
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
// becomes its mount point. Either way it then finds the sandboxes an
// earlier start left in the other root (findMoved).
func (d *Driver) chooseClones() error {
	if err := d.mountClones(); err != nil {
		return err
	}
	d.findMoved()
	return nil
}

func (d *Driver) mountClones() error {
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
	d.cow.img, d.cow.mnt = img, mnt
	d.growClonePool() // a host grown while no server ran, or a pool made smaller
	return nil
}

// The pool follows the host filesystem (loopdisk.GrowClonePool): grown at
// mount, and whenever a reading of the host's free space (a create's or
// an upload's admission, the storage watcher's every storageInterval)
// finds the host at least loopdisk.ClonePoolGrowStep larger than the
// pool, in the background. An admission that finds the pool itself below
// the watermark while the host has room grows it first, on its path
// (a few milliseconds, once per host grow).

// poolGrowth is the clone pool's size and its grows.
type poolGrowth struct {
	img, mnt string // "" without the pool

	size    atomic.Int64 // the pool's data size, bytes: 0 when unknown
	running atomic.Bool  // a background grow is under way
	grows   atomic.Int64 // grows so far: a reading of the pool before one is stale

	mu       sync.Mutex // held while growing
	stopped  bool       // unmounted: no more grows
	failedAt int64      // the host size a grow last failed for: not retried until it changes
}

// growable reports whether the pool should grow for a host filesystem of
// hostTotal bytes.
func (g *poolGrowth) growable(hostTotal int64) bool {
	size := g.size.Load()
	return g.img != "" && size > 0 && hostTotal-size >= loopdisk.ClonePoolGrowStep
}

// maybeGrowClonePool grows the pool in the background when the host, of
// hostTotal bytes, is larger than the pool.
func (d *Driver) maybeGrowClonePool(hostTotal int64) {
	if !d.cow.growable(hostTotal) || !d.cow.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer d.cow.running.Store(false)
		d.growClonePool()
	}()
}

// growClonePool grows the pool to the host filesystem's size, if it is
// smaller, and logs the change.
func (d *Driver) growClonePool() {
	g := &d.cow
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.img == "" || g.stopped {
		return
	}
	host, err := loopdisk.ClonePoolTarget(d.cfg.StateDir)
	if err == nil && host == g.failedAt {
		return // failed for this host size already: logged then
	}
	before, after, err := loopdisk.GrowClonePool(g.img, g.mnt)
	if before > 0 {
		g.size.Store(after)
	}
	if err != nil {
		g.failedAt = host
		d.log.Warn("the clone pool could not grow with the host's filesystem: sandbox disks may fill it before the host", "pool", g.mnt, "size", before, "host", host, "err", err)
		return
	}
	g.failedAt = 0
	if after > before {
		g.grows.Add(1)
		d.log.Info("the clone pool grew with the host's filesystem", "pool", g.mnt, "from", before, "to", after)
	}
}

// Where a sandbox lives does not depend on whether this start mounted the
// clone pool. An earlier start that could not mount it (or ran with
// Clones off) put its sandboxes in StateDir/sandboxes; one that did, in
// StateDir/cow/sandboxes. A server killed with -9 leaves its jails
// running and, if it had the pool, the pool mounted; the next start, with
// or without the pool, must still find, adopt, resume and delete them.
// So New looks in both roots: new sandboxes go to d.data, and those of
// the other root are recorded in d.moved and found there by sandboxDir,
// List and clearPool for as long as they live. Looking on disk rather
// than recording each sandbox's root in the store keeps the driver the
// only one that knows its layout, and needs nothing of a server killed
// before it could write a row. A pool image that exists but cannot be
// mounted hides its sandboxes until a start mounts it; the server then
// sees a running sandbox there as lost, as before.

// otherRoot is the root of sandboxes/ and pool/ this start does not use:
// StateDir when the pool is mounted at d.data, the pool's mount point
// when it is mounted (by an earlier server) and d.data is StateDir, else
// "".
func (d *Driver) otherRoot() string {
	if d.data != d.cfg.StateDir {
		return d.cfg.StateDir
	}
	mnt := filepath.Join(d.cfg.StateDir, cowMount)
	if ok, _ := loopdisk.IsMountPoint(mnt); ok {
		return mnt
	}
	return ""
}

// movedSandboxes are the sandboxes of the other root, by id.
type movedSandboxes struct {
	mu   sync.Mutex
	dirs map[string]string
	root string // the other root's sandboxes/, or ""
}

// findMoved records the sandboxes of the other root.
func (d *Driver) findMoved() {
	root := d.otherRoot()
	if root == "" {
		return
	}
	d.moved.root = filepath.Join(root, "sandboxes")
	entries, _ := os.ReadDir(d.moved.root)
	for _, e := range entries {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		if exists(filepath.Join(d.sandboxesDir(), e.Name())) {
			// In both (never made by the driver): this start's own wins.
			d.log.Warn("a sandbox directory is in both state roots: the other one is ignored", "sandbox", e.Name(), "ignored", filepath.Join(d.moved.root, e.Name()))
			continue
		}
		if d.moved.dirs == nil {
			d.moved.dirs = map[string]string{}
		}
		d.moved.dirs[e.Name()] = filepath.Join(d.moved.root, e.Name())
		d.log.Info("found a sandbox an earlier start left outside this start's state root", "sandbox", e.Name(), "dir", d.moved.dirs[e.Name()])
	}
}

// dir returns the directory of moved sandbox id, or "".
func (m *movedSandboxes) dir(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirs[id]
}

// appendIDs appends the ids of the moved sandboxes whose directories
// remain.
func (m *movedSandboxes) appendIDs(ids []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(ids)
	for id, dir := range m.dirs {
		if exists(dir) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids[n:])
	return ids
}

// removeOrphanCgroup kills and removes sandbox id's cgroups when no
// state file of it is in reach: a jail whose directory is in a pool this
// start could not mount, or one a crash left before its state file. Lost
// or deleted, nothing of it is left running.
func (d *Driver) removeOrphanCgroup(ctx context.Context, id string) error {
	if d.cgroups == nil {
		return nil
	}
	var cg jail.Cgroup
	for _, p := range d.cgroups.Parents() {
		if dir := filepath.Join(p, d.cgroupName(id)); exists(dir) {
			cg.Dirs = append(cg.Dirs, dir)
		}
	}
	if len(cg.Dirs) == 0 {
		return nil
	}
	procs, _ := cg.Procs()
	if len(procs) > 0 {
		d.log.Warn("stopping a sandbox's processes whose state file is out of reach", "sandbox", id, "cgroup", cg.Dirs[0], "processes", len(procs))
	}
	return cg.Remove(ctx)
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

// unmountClonePool detaches the clone pool's mount (Shutdown): its
// snapshots stay in the image for the next driver, which mounts it again.
// The filesystem goes once the last sandbox disk in it is unmounted.
func (d *Driver) unmountClonePool() error {
	if d.data == d.cfg.StateDir {
		return nil
	}
	d.cow.mu.Lock()
	d.cow.stopped = true
	d.cow.mu.Unlock()
	return loopdisk.Unmount(d.data)
}
