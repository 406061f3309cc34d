package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/boxkite/boxkite/server"
)

var _ server.StatsDriver = (*Driver)(nil)

// Stats implements server.StatsDriver from the sandbox's cgroup: what its
// processes hold in memory now (page cache and kernel memory included) and
// how many tasks it runs. Without cgroup limits (not root, or
// Config.Cgroups off) there is nothing to read and it fails.
func (d *Driver) Stats(_ context.Context, id string) (server.Stats, error) {
	if !validID.MatchString(id) {
		return server.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, server.ErrNotFound)
	}
	st, err := readState(d.sandboxDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return server.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, server.ErrNotFound)
	}
	if err != nil {
		return server.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	if len(st.Cgroup.Dirs) == 0 {
		return server.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, server.ErrNoStats)
	}
	u, err := st.Cgroup.Usage()
	if err != nil {
		return server.Stats{}, fmt.Errorf("sandbox stats %s: %w", id, err)
	}
	out := server.Stats{MemoryBytes: u.Memory, MemoryAnonBytes: u.MemoryAnon, Pids: u.Pids, Frozen: d.frozen.has(id)}
	if sd, ok := d.sandboxDisk(id); ok {
		out.DiskUsedBytes, out.DiskQuotaBytes = sd.UsedBytes, sd.QuotaBytes
	}
	return out, nil
}
