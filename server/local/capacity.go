//go:build linux

package local

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local/hostcap"
	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
)

// Host capacity (issue 19): the driver accounts for the host's own
// limits (free disk, tasks, loop devices, memory) and refuses creates
// (and, for the disk, uploads) before the host runs out of them. The
// readings, their cache and the admission are server/local/hostcap's;
// the driver tells it what it knows of its sandboxes (hostSource).

var (
	_ model.CapacityDriver = (*Driver)(nil)
	_ model.DiskSyncer     = (*Driver)(nil)
)

// Defaults of HostLimits.
const (
	DefaultMinFreeDisk   = hostcap.DefaultMinFreeDisk
	DefaultMinFreeMemory = hostcap.DefaultMinFreeMemory
)

// HostLimits bound what this driver's sandboxes may take of the host
// (hostcap.Limits).
type HostLimits = hostcap.Limits

// capacity is the driver's account of the host (hostcap.Host, made by
// New) and the cache of its sandboxes' pids files, which a driver New did
// not make (cleanup's) has too.
type capacity struct {
	*hostcap.Host
	pids hostcap.Pids
}

// newCapacity returns d's account of the host.
func newCapacity(d *Driver) capacity {
	return capacity{Host: hostcap.New(d.cfg.StateDir, d.cfg.Host, hostSource{d})}
}

// hostSource is what the account of the host asks the driver.
type hostSource struct{ d *Driver }

func (s hostSource) Loop() bool { return s.d.storage == StorageLoop }

func (s hostSource) ClonePool() hostcap.ClonePool {
	if s.d.cow.img == "" {
		return nil
	}
	return clonePool(s)
}

func (s hostSource) SandboxTasks(ctx context.Context) (tasks, sandboxes int64, ok bool) {
	if s.d.cgroups == nil {
		return 0, 0, false
	}
	tasks, sandboxes = s.d.sandboxTasks(ctx)
	return tasks, sandboxes, true
}

// clonePool is the driver's clone pool as the account of the host sees it.
type clonePool struct{ d *Driver }

func (p clonePool) Mount() string                 { return p.d.cow.mnt }
func (p clonePool) Grows() int64                  { return p.d.cow.grows.Load() }
func (p clonePool) Growable(hostTotal int64) bool { return p.d.cow.growable(hostTotal) }
func (p clonePool) MaybeGrow(hostTotal int64)     { p.d.maybeGrowClonePool(hostTotal) }
func (p clonePool) Grow()                         { p.d.growClonePool() }

// stopKeeping ends the background readings (Shutdown). A driver New did
// not make (cleanup's) keeps none.
func (d *Driver) stopKeeping() {
	if d.capacity.Host != nil {
		d.capacity.Stop()
	}
}

// noteCreated counts a sandbox created since the reading.
func (d *Driver) noteCreated() {
	if d.capacity.Host != nil {
		d.capacity.NoteCreated()
	}
}

// sandboxTasks sums the tasks in this driver's sandboxes' cgroups, warm
// pool members included: those whose state file names a cgroup with
// pids accounting (hostcap.Pids: each one's pids.current is found once,
// from its state file, and then read alone at every reading).
func (d *Driver) sandboxTasks(ctx context.Context) (tasks, sandboxes int64) {
	parents := []string{d.sandboxesDir(), d.poolDir()}
	if d.moved.root != "" {
		parents = append(parents, d.moved.root) // sandboxes an earlier start left there (cow.go)
	}
	return d.capacity.pids.Sum(ctx, parents, statePids)
}

// statePids finds the pids.current of the sandbox or pool member in dir
// from its state file.
func statePids(dir string) (string, int64, bool) {
	st, err := readState(dir)
	if err != nil || len(st.Cgroup.Dirs) == 0 {
		return "", 0, false // not started yet, paused with filesystem, or without cgroups
	}
	// PidsFile, not Usage: the tasks alone, one file, where Usage also
	// probes and reads every hierarchy's memory files.
	path, n, err := st.Cgroup.PidsFile()
	if err != nil {
		return "", 0, false
	}
	return path, n, true
}

// AdmitCreate implements model.CapacityDriver.
func (d *Driver) AdmitCreate(ctx context.Context, n int) error {
	return d.capacity.AdmitCreate(ctx, n)
}

// AdmitWrite implements model.CapacityDriver: a sandbox whose disk failed
// an earlier write takes none, and the host's disk must be above its
// watermark (hostcap.Host.AdmitWrite reads the disk alone).
func (d *Driver) AdmitWrite(_ context.Context, id string) error {
	if id != "" && d.disks.failed(id) {
		return fmt.Errorf("%w: sandbox %s's disk could not store an earlier write", model.ErrInsufficientStorage, id)
	}
	return d.capacity.AdmitWrite()
}

// Capacity implements model.CapacityDriver.
func (d *Driver) Capacity(ctx context.Context, ids []string) (api.HostStatus, error) {
	out, err := d.capacity.Status(ctx)
	if err != nil {
		return api.HostStatus{}, err
	}
	for _, id := range ids {
		if sd, ok := d.sandboxDisk(id); ok {
			out.Sandboxes = append(out.Sandboxes, sd)
		}
	}
	return out, nil
}

// sandboxDisk is the disk use of sandbox id, when it has a disk of its own.
func (d *Driver) sandboxDisk(id string) (api.SandboxDisk, bool) {
	if d.storage != StorageLoop || !validID.MatchString(id) {
		return api.SandboxDisk{}, false
	}
	var fs unix.Statfs_t
	mnt := filepath.Join(d.sandboxDir(id), diskMount)
	if mounted, err := loopdisk.IsMountPoint(mnt); err != nil || !mounted {
		return api.SandboxDisk{}, false
	}
	if err := unix.Statfs(mnt, &fs); err != nil {
		return api.SandboxDisk{}, false
	}
	return api.SandboxDisk{
		ID: id, UsedBytes: int64(fs.Blocks-fs.Bfree) * fs.Bsize, QuotaBytes: int64(fs.Blocks) * fs.Bsize,
		Frozen: d.frozen.has(id), FrozenReason: d.frozen.cause(id),
	}, true
}
