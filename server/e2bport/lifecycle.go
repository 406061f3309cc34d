package e2bport

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sandbox"
)

// Lifecycle is the facade's sandbox lifecycle: e2b.Lifecycle, through the
// lifecycle hub and the snapshot service.
type Lifecycle struct{ d Deps }

var _ e2b.Lifecycle = (*Lifecycle)(nil)

func (l *Lifecycle) Create(ctx context.Context, c e2b.Caller, spec e2b.CreateSpec) (e2b.Sandbox, error) {
	acct := account(c)
	spec.Lifetime = min(spec.Lifetime, l.d.MaxLifetime) // cut, as E2B's KeepAliveFor cuts a timeout
	if spec.ImageID != "" {
		sn, err := l.snapshot(ctx, acct, spec.ImageID)
		if err != nil {
			return e2b.Sandbox{}, err
		}
		if sn != nil {
			return l.restore(ctx, c, sn, spec)
		}
	}
	sbs, err := l.d.Sandboxes.Start(ctx, acct, sandbox.StartSpec{Lifetime: spec.Lifetime, ImageID: spec.ImageID, AutoPause: spec.AutoPause})
	if err != nil {
		return e2b.Sandbox{}, err
	}
	return toSandbox(sbs[0]), nil
}

// snapshot is the account's snapshot a create's template names: by its
// id, else by its name (createSnapshot({name})), the newest completed one
// of that name, as E2B's Sandbox.create takes a snapshot's name; nil for
// neither (an image).
func (l *Lifecycle) snapshot(ctx context.Context, acct *model.Account, template string) (*model.Snapshot, error) {
	sn, err := l.d.Store.Snapshot(ctx, acct.ID, template)
	if err == nil {
		return sn, nil
	}
	if !errors.Is(err, model.ErrNotFound) {
		return nil, fmt.Errorf("look up snapshot: %w", err)
	}
	sns, err := l.d.Store.ListSnapshots(ctx, acct.ID, "")
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	for _, sn := range sns { // newest first
		if sn.Label == template && sn.Status == api.SnapshotCompleted {
			return sn, nil
		}
	}
	return nil, nil
}

// restore is a create whose template is one of the caller's snapshots: a
// new sandbox with its files, kept spec.Lifetime.
func (l *Lifecycle) restore(ctx context.Context, c e2b.Caller, sn *model.Snapshot, spec e2b.CreateSpec) (e2b.Sandbox, error) {
	sb, err := l.d.Snapshots.Restore(ctx, account(c), sn, "")
	if err != nil {
		return e2b.Sandbox{}, err
	}
	out, err := l.keep(ctx, c, sb, spec.Lifetime)
	out.RestoredFrom = sn.SandboxID
	return out, err
}

// keep sets a sandbox the facade started from a snapshot to end lifetime
// from now, as E2B's timeout says.
func (l *Lifecycle) keep(ctx context.Context, c e2b.Caller, sb *model.Sandbox, lifetime time.Duration) (e2b.Sandbox, error) {
	out, err := l.SetExpiry(ctx, c, sb.ID, l.d.Now().Add(lifetime))
	if err != nil {
		return toSandbox(sb), err
	}
	return out, nil
}

func (l *Lifecycle) Snapshot(ctx context.Context, c e2b.Caller, id, name string) (e2b.SnapshotInfo, error) {
	acct := account(c)
	sb, err := l.live(ctx, acct, id)
	if err != nil {
		return e2b.SnapshotInfo{}, err
	}
	sn, err := l.d.Snapshots.Take(ctx, acct, sb, name)
	if err != nil {
		return e2b.SnapshotInfo{}, err
	}
	return toSnapshot(sn), nil
}

func toSnapshot(sn *model.Snapshot) e2b.SnapshotInfo {
	return e2b.SnapshotInfo{ID: sn.ID, SandboxID: sn.SandboxID, Name: sn.Label}
}

func (l *Lifecycle) Snapshots(ctx context.Context, c e2b.Caller, sandboxID string) ([]e2b.SnapshotInfo, error) {
	acct := account(c)
	if sandboxID != "" {
		// Only the caller's sandboxes, gone ones included: their
		// snapshots outlive them.
		if _, err := l.d.Store.Sandbox(ctx, acct.ID, sandboxID); errors.Is(err, model.ErrNotFound) {
			return nil, e2b.ErrNotFound
		} else if err != nil {
			return nil, fmt.Errorf("load sandbox: %w", err)
		}
	}
	sns, err := l.d.Store.ListSnapshots(ctx, acct.ID, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out := make([]e2b.SnapshotInfo, 0, len(sns))
	for _, sn := range sns {
		if sn.Status == api.SnapshotCompleted {
			out = append(out, toSnapshot(sn))
		}
	}
	return out, nil
}

func (l *Lifecycle) DeleteSnapshot(ctx context.Context, c e2b.Caller, id string) error {
	sn, err := l.d.Store.Snapshot(ctx, account(c).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return e2b.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	return l.d.Snapshots.Delete(ctx, sn)
}

func (l *Lifecycle) Fork(ctx context.Context, c e2b.Caller, id string, count int, lifetime time.Duration) ([]e2b.Sandbox, error) {
	acct := account(c)
	sb, err := l.live(ctx, acct, id)
	if err != nil {
		return nil, err
	}
	kids, err := l.d.Snapshots.Fork(ctx, acct, sb, count)
	if err != nil {
		return nil, err
	}
	out := make([]e2b.Sandbox, len(kids))
	for i, k := range kids {
		if out[i], err = l.keep(ctx, c, k, lifetime); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func toSandbox(sb *model.Sandbox) e2b.Sandbox {
	return e2b.Sandbox{
		ID: sb.ID, AccountID: sb.AccountID, Size: sb.Size, StorageGB: sb.StorageGB,
		CreatedAt: sb.CreatedAt, ExpiresAt: sb.ExpiresAt, Paused: sb.Status == api.StatusPaused, AutoPause: sb.AutoPause,
	}
}

// running loads the caller's running sandbox; one that is not active
// (paused included) is not found, as E2B answers for a sandbox that has
// ended.
func (l *Lifecycle) running(ctx context.Context, acct *model.Account, id string) (*model.Sandbox, error) {
	sb, err := l.live(ctx, acct, id)
	if err == nil && !sb.Active() {
		return nil, e2b.ErrNotFound
	}
	return sb, err
}

// live loads the caller's running or paused sandbox.
func (l *Lifecycle) live(ctx context.Context, acct *model.Account, id string) (*model.Sandbox, error) {
	sb, err := l.d.Store.Sandbox(ctx, acct.ID, id)
	if errors.Is(err, model.ErrNotFound) || err == nil && !sb.Live() {
		return nil, e2b.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load sandbox: %w", err)
	}
	return sb, nil
}

func (l *Lifecycle) Sandbox(ctx context.Context, c e2b.Caller, id string) (e2b.Sandbox, error) {
	sb, err := l.live(ctx, account(c), id)
	if err != nil {
		return e2b.Sandbox{}, err
	}
	return toSandbox(sb), nil
}

func (l *Lifecycle) Sandboxes(ctx context.Context, c e2b.Caller) ([]e2b.Sandbox, error) {
	sbs, err := l.d.Store.ListSandboxes(ctx, account(c).ID, true)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	out := make([]e2b.Sandbox, 0, len(sbs))
	for _, sb := range sbs {
		if sb.Live() {
			out = append(out, toSandbox(sb))
		}
	}
	return out, nil
}

func (l *Lifecycle) Destroy(ctx context.Context, c e2b.Caller, id string) error {
	sb, err := l.live(ctx, account(c), id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sandbox.CleanupTimeout)
	defer cancel()
	err = l.d.Sandboxes.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonDeleted)
	if errors.Is(err, sandbox.ErrNotActive) {
		return e2b.ErrNotFound
	}
	return err
}

func (l *Lifecycle) Pause(ctx context.Context, c e2b.Caller, id string, keepMemory bool) error {
	sb, err := l.live(ctx, account(c), id)
	if err != nil {
		return err
	}
	if sb.Status == api.StatusPaused {
		return e2b.ErrAlreadyPaused
	}
	mode := api.PauseFreeze
	if !keepMemory {
		mode = api.PauseFilesystem
	}
	_, err = l.d.Sandboxes.Pause(ctx, sb, mode)
	if ae, ok := errors.AsType[*api.Error](err); ok && ae.Code == api.CodeSandboxPaused {
		return e2b.ErrAlreadyPaused // paused meanwhile in the other mode
	}
	return err
}

func (l *Lifecycle) Resume(ctx context.Context, c e2b.Caller, id string) (e2b.Sandbox, bool, error) {
	acct := account(c)
	sb, err := l.live(ctx, acct, id)
	if err != nil {
		return e2b.Sandbox{}, false, err
	}
	if sb.Active() {
		return toSandbox(sb), false, nil
	}
	resumed, _, err := l.d.Sandboxes.Resume(ctx, acct, sb)
	if err != nil {
		return e2b.Sandbox{}, false, err
	}
	return toSandbox(resumed), true, nil
}

func (l *Lifecycle) SetExpiry(ctx context.Context, c e2b.Caller, id string, at time.Time) (e2b.Sandbox, error) {
	cur, err := l.live(ctx, account(c), id)
	if err != nil {
		return e2b.Sandbox{}, err
	}
	if !cur.Active() {
		return e2b.Sandbox{}, sandbox.PausedAnswer(cur)
	}
	if most := l.d.Now().Add(l.d.MaxLifetime); at.After(most) {
		at = most // cut, as E2B's KeepAliveFor cuts a timeout to what its maximum leaves
	}
	sb, err := l.d.Store.UpdateSandbox(ctx, id, func(sb *model.Sandbox) error {
		if !sb.Active() {
			return sandbox.ErrNotActive
		}
		sb.ExpiresAt = at
		sb.LifetimeMinutes = int(math.Ceil(sb.ExpiresAt.Sub(sb.CreatedAt).Minutes()))
		return nil
	})
	if errors.Is(err, sandbox.ErrNotActive) {
		return e2b.Sandbox{}, e2b.ErrNotFound
	}
	if err != nil {
		return e2b.Sandbox{}, fmt.Errorf("set sandbox expiry: %w", err)
	}
	l.d.Sandboxes.RecordExpiry(ctx, sb)
	return toSandbox(sb), nil
}

// Usage reads the sandbox's use from the driver: a running one's, and a
// frozen one's (pause(), boxkite's freeze), whose memory it still holds
// as it was paused and whose CPU time stands still (CPUMicros 0, so
// cpuUsedPct is 0 at once). E2B's metrics of a paused sandbox are its
// last samples; a frozen sandbox's memUsed was 0 here. A sandbox paused
// keeping its files only (or its memory on disk) holds none: no use.
func (l *Lifecycle) Usage(ctx context.Context, c e2b.Caller, id string) (e2b.Usage, bool, error) {
	sb, err := l.live(ctx, account(c), id)
	if err != nil {
		return e2b.Usage{}, false, err
	}
	frozen := sb.Status == api.StatusPaused && sb.PausedWith == api.PauseFreeze
	if !sb.Active() && !frozen {
		return e2b.Usage{}, false, nil
	}
	sd, ok := l.d.Driver.(model.StatsDriver)
	if !ok {
		return e2b.Usage{}, false, nil
	}
	st, err := sd.Stats(ctx, sb.ID)
	if errors.Is(err, model.ErrNoStats) {
		return e2b.Usage{}, false, nil
	}
	if err != nil {
		return e2b.Usage{}, false, fmt.Errorf("sandbox stats: %w", err)
	}
	u := e2b.Usage{MemoryBytes: st.MemoryBytes, CPUMicros: st.CPUMicros, DiskUsedBytes: st.DiskUsedBytes, DiskTotalBytes: st.DiskQuotaBytes}
	if frozen {
		u.CPUMicros = 0
	}
	return u, true, nil
}

// KeepsImages reports whether the server builds and imports boxkite
// images.
func (l *Lifecycle) KeepsImages() bool { return l.d.KeepsImages }
