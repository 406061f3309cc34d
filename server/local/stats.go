//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
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

// oomSeen serializes MemoryKilled's read, compare and write of a
// sandbox's oomSeenFile.
type oomSeen struct {
	mu sync.Mutex
}

// oomSeenFile, in a sandbox's directory, holds the OOM-kill count of its
// jail's cgroup MemoryKilled last saw, with the jail it was seen for
// (oomSeenState). It is on disk, not in the driver's memory, so a
// restarted server that adopts the jail does not pin a kill seen before
// its restart on the next command ending with a SIGKILL (it counted from
// 0). Written only when the count grew: never on an exec's way.
const oomSeenFile = "oom-seen.json"

// oomSeenState is oomSeenFile's content: Count was seen in the cgroup of
// the jail PID started at StartTime. A new jail (a resume after a
// filesystem pause) has a new cgroup, counted from 0.
type oomSeenState struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Count     int64  `json:"count"`
}

// MemoryKilled implements model.MemoryKillDriver from the sandbox's
// cgroup's OOM-kill count (jail.Cgroup.OOMKills): true when it grew since
// the count oomSeenFile holds for the running jail. Without cgroup limits
// nothing is ever killed at one.
func (d *Driver) MemoryKilled(_ context.Context, id string) (bool, error) {
	if !validID.MatchString(id) {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, model.ErrNotFound)
	}
	dir := d.sandboxDir(id)
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, model.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
	}
	n, ok, err := st.Cgroup.OOMKills()
	if err != nil || !ok || n == 0 {
		return false, err
	}
	d.oom.mu.Lock()
	defer d.oom.mu.Unlock()
	var seen oomSeenState
	b, err := jail.ReadSmallFile(filepath.Join(dir, oomSeenFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
	default:
		_ = json.Unmarshal(b, &seen) // garbled: seen none, as without the file
	}
	if seen.PID != st.PID || seen.StartTime != st.StartTime {
		seen = oomSeenState{PID: st.PID, StartTime: st.StartTime} // another jail's count
	}
	if n <= seen.Count {
		return false, nil
	}
	seen.Count = n
	if err := writeOOMSeen(dir, seen); err != nil {
		return false, fmt.Errorf("sandbox memory kills %s: %w", id, err)
	}
	return true, nil
}

// writeOOMSeen replaces dir's oomSeenFile with seen (a rename: never half
// written).
func writeOOMSeen(dir string, seen oomSeenState) error {
	b, err := json.Marshal(seen)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, oomSeenFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, oomSeenFile))
}
