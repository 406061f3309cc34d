//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/boxkite/boxkite/server/model"
)

var (
	_ model.StatsDriver      = (*Driver)(nil)
	_ model.MemoryKillDriver = (*Driver)(nil)
)

// Stats implements model.StatsDriver from the sandbox's cgroup: what its
// processes hold in memory now (page cache and kernel memory included) and
// how many tasks it runs, and the CPU time they used. Without cgroup limits (not root, or
// Config.Cgroups off) there is nothing to read and it fails.
func (d *Driver) Stats(_ context.Context, id string) (model.Stats, error) {
	if !validID.MatchString(id) {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, model.ErrNotFound)
	}
	st, err := readState(d.sandboxDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, model.ErrNotFound)
	}
	if err != nil {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	if len(st.Cgroup.Dirs) == 0 {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, model.ErrNoStats)
	}
	u, err := st.Cgroup.Usage()
	if err != nil {
		return model.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	out := model.Stats{MemoryBytes: u.Memory, MemoryAnonBytes: u.MemoryAnon, Pids: u.Pids, CPUMicros: u.CPUMicros}
	if cause := d.frozen.cause(id); cause != "" {
		out.Frozen, out.FrozenReason = true, cause
	}
	if sd, ok := d.sandboxDisk(id); ok {
		out.DiskUsedBytes, out.DiskQuotaBytes = sd.UsedBytes, sd.QuotaBytes
	}
	return out, nil
}

// oomSeen is the OOM-kill count of each sandbox's cgroup last seen by
// MemoryKilled; a sandbox missing from it (none asked yet, or a restarted
// driver) counts from 0, its cgroup's start.
type oomSeen struct {
	mu   sync.Mutex
	seen map[string]int64
}

// MemoryKilled implements model.MemoryKillDriver from the sandbox's
// cgroup's OOM-kill count (jail.Cgroup.OOMKills): true when it grew since
// the last call. Without cgroup limits nothing is ever killed at one.
func (d *Driver) MemoryKilled(_ context.Context, id string) (bool, error) {
	if !validID.MatchString(id) {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, model.ErrNotFound)
	}
	st, err := readState(d.sandboxDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, model.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
	}
	n, ok, err := st.Cgroup.OOMKills()
	if err != nil || !ok {
		return false, err
	}
	d.oom.mu.Lock()
	defer d.oom.mu.Unlock()
	if d.oom.seen == nil {
		d.oom.seen = map[string]int64{}
	}
	last := d.oom.seen[id]
	d.oom.seen[id] = n
	return n > last, nil
}

// forget drops a deleted sandbox's count.
func (o *oomSeen) forget(id string) {
	o.mu.Lock()
	delete(o.seen, id)
	o.mu.Unlock()
}
