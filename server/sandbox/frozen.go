package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// Frozen sandboxes (issue 19): while the host's disk is nearly full, the
// local driver freezes running sandboxes (their cgroup), so they stop
// writing into a disk that cannot take it rather than corrupting what
// they had. The server records each freeze and thaw in the sandbox's
// audit log (so watchers see it), answers calls to a frozen sandbox with
// 507 insufficient_storage, and ends the calls in flight to it the same
// way instead of leaving them hanging on a frozen sidecar.

// frozenSandboxes is what the driver reported frozen.
type frozenSandboxes struct {
	mu  sync.Mutex
	ids map[string]frozenAt
}

// frozenAt is since when a sandbox is frozen, and whether the clone pool
// (rather than the host's filesystem) ran low.
type frozenAt struct {
	since time.Time
	pool  bool
}

func (f *frozenSandboxes) get(id string) (frozenAt, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.ids[id]
	return t, ok
}

func (f *frozenSandboxes) set(id string, frozen, pool bool, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]frozenAt{}
	}
	if frozen {
		f.ids[id] = frozenAt{since: now, pool: pool}
	} else {
		delete(f.ids, id)
	}
}

// FrozenReason is why sandbox id is frozen (api.FrozenHostDisk,
// api.FrozenClonePool), "" when it is not: the sandbox resource's
// frozen_reason, so a client can say what ran out.
func (s *Service) FrozenReason(id string) string {
	f, ok := s.frozen.get(id)
	switch {
	case !ok:
		return ""
	case f.pool:
		return api.FrozenClonePool
	}
	return api.FrozenHostDisk
}

// apiSandbox is sb as the API shows it, with what this server alone
// knows of it: whether it is frozen, and why.
func (s *Service) apiSandbox(sb *model.Sandbox) api.Sandbox {
	out := sb.ToAPI()
	if sb.Active() {
		out.FrozenReason = s.FrozenReason(sb.ID)
	}
	return out
}

// FrozenAnswer is the 507 for a call to a frozen sandbox, or nil.
// It names the clone pool when the pool, not the host's filesystem, ran
// low.
func (s *Service) FrozenAnswer(id string) error {
	f, ok := s.frozen.get(id)
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("sandbox %s is frozen: the host ran out of disk space, so it was stopped before it could lose what it wrote", id)
	hint := "free space on the host (remove sandboxes and volumes you no longer need); the sandbox resumes by itself once there is room"
	if f.pool {
		msg = fmt.Sprintf("sandbox %s is frozen: the clone pool that holds the sandboxes' disks ran out of space, so it was stopped before it could lose what it wrote", id)
		hint = "free space in the clone pool (remove sandboxes and snapshots you no longer need), or grow the host's filesystem: the pool grows with it; the sandbox resumes by itself once there is room"
	}
	return &api.Error{
		Status: http.StatusInsufficientStorage, Code: api.CodeInsufficientStorage, Message: msg, Hint: hint,
		Details: map[string]any{"resource": api.HostDiskResource, "frozen": true, "clone_pool": f.pool, "since": f.since.UTC()},
	}
}

// frozenForStorage reports whether sandbox id runs but is frozen because
// the host's disk filled: its sidecar cannot answer until space comes
// back, and it is not lost (reconcile adopts it; the storage watch thaws
// it). Destroying it would lose every write it acknowledged.
func (s *Service) frozenForStorage(ctx context.Context, id string) bool {
	d := s.baseDriver()
	sd, ok := d.(model.StatsDriver)
	if !ok {
		return false
	}
	if st, err := sd.Stats(ctx, id); err != nil || !st.Frozen {
		return false
	}
	if p, ok := d.(model.Prober); ok {
		alive, err := p.Probe(ctx, id)
		return err == nil && alive
	}
	return true
}

// WatchStorage follows the driver's freezes and thaws until ctx is done.
func (s *Service) WatchStorage(ctx context.Context) {
	d := s.baseDriver()
	sw, ok := d.(model.StorageWatcher)
	if !ok {
		return
	}
	for ctx.Err() == nil {
		err := sw.WatchStorage(ctx, func(id string, frozen, pool bool) { s.storageChanged(ctx, id, frozen, pool) })
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "watch host storage", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// storageChanged records a freeze or thaw of sandbox id.
func (s *Service) storageChanged(ctx context.Context, id string, frozen, pool bool) {
	s.frozen.set(id, frozen, pool, s.now())
	op := "sandbox_thawed"
	reason := "the host has disk space again"
	if frozen {
		op, reason = "sandbox_frozen", "the host's disk is nearly full"
		if pool {
			reason = "the clone pool is nearly full"
		}
		// Calls in flight would wait on a frozen sidecar: end them.
		s.calls.Cancel(id, s.FrozenAnswer(id))
	}
	sb, err := s.store.SandboxByID(ctx, id)
	if errors.Is(err, model.ErrNotFound) {
		return // a warm pool member, or gone
	}
	if err != nil {
		s.log.ErrorContext(ctx, "record "+op, "sandbox", id, "err", err)
		return
	}
	_ = s.audit(ctx, audit.Record{ // a failure waits in the audit gate
		Sandbox: sb, Source: api.LogSourceSystem, Operation: op,
		Detail: map[string]any{"reason": reason}, Started: s.now(),
	})
}
