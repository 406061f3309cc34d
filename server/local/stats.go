//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.StatsDriver = (*Driver)(nil)

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
	out := model.Stats{MemoryBytes: u.Memory, MemoryAnonBytes: u.MemoryAnon, Pids: u.Pids, CPUMicros: u.CPUMicros, Frozen: d.frozen.has(id)}
	if sd, ok := d.sandboxDisk(id); ok {
		out.DiskUsedBytes, out.DiskQuotaBytes = sd.UsedBytes, sd.QuotaBytes
	}
	return out, nil
}
