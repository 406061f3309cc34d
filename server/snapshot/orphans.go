package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Pending snapshots a crash left (session 24). A snapshot is pending from
// its reservation to its record, and its row names the server instance
// taking it (Snapshot.Owner). Servers sharing the database keep a
// heartbeat row each (model.InstanceStore, renewed by the server's Run);
// a pending snapshot whose owner's heartbeat ended, or that has no owner
// (reserved before owners were recorded), is one a crash interrupted:
// Reconcile at start-up and Sweep after it mark it failed and delete its
// partial object in the bucket. A pending snapshot of a live server is
// left to it: a replica that starts no longer fails the snapshots
// another is taking (bench/issue27/session24-snapowner.md). A sole server
// (Config.Instances nil) is the only live one: every pending snapshot it
// did not take in this life is a crash's, as before.

// Reconcile marks failed, at start-up, the pending snapshots of servers
// that are not alive (this server's previous life among them) and those
// with no owner.
func (s *Service) Reconcile(ctx context.Context) error {
	return s.failOrphans(ctx, true)
}

// Sweep marks failed the pending snapshots whose owner's heartbeat ended
// since (a server that died mid-copy). Unlike Reconcile it leaves those
// with no owner: a server of an older version, during a rolling upgrade,
// may be taking them.
func (s *Service) Sweep(ctx context.Context) error {
	return s.failOrphans(ctx, false)
}

// errNotPending stops the update of a snapshot that is no longer pending.
var errNotPending = errors.New("the snapshot is no longer pending")

// failOrphans marks failed each pending snapshot whose owner is not
// alive, and, when ownerless is set, each with no owner.
func (s *Service) failOrphans(ctx context.Context, ownerless bool) error {
	// The rows first, the live servers after: a row's owner recorded its
	// heartbeat before it reserved the row (Init), so one alive now is
	// in the list read after it.
	pending, err := s.cfg.Store.SnapshotsWithStatus(ctx, api.SnapshotPending)
	if err != nil {
		return fmt.Errorf("list pending snapshots: %w", err)
	}
	if len(pending) == 0 {
		return nil
	}
	alive, err := s.liveInstances(ctx)
	if err != nil {
		return err
	}
	for _, sn := range pending {
		if alive[sn.Owner] || (sn.Owner == "" && !ownerless) {
			continue
		}
		_, err := s.cfg.Store.UpdateSnapshot(ctx, sn.ID, func(sn *model.Snapshot) error {
			if sn.Status != api.SnapshotPending {
				return errNotPending // completed or failed meanwhile
			}
			sn.Status = api.SnapshotFailed
			return nil
		})
		switch {
		case errors.Is(err, errNotPending):
			continue
		case err != nil:
			return fmt.Errorf("mark snapshot %s failed: %w", sn.ID, err)
		}
		s.cfg.Log.WarnContext(ctx, "snapshot interrupted by its server's end: failed", "snapshot", sn.ID, "sandbox", sn.SandboxID, "owner", sn.Owner)
		s.dropPartialRemote(ctx, sn)
	}
	return nil
}

// liveInstances is the set of servers alive now: this one, and those
// whose heartbeat runs past now.
func (s *Service) liveInstances(ctx context.Context) (map[string]bool, error) {
	alive := map[string]bool{}
	if s.cfg.Instance != "" {
		alive[s.cfg.Instance] = true
	}
	if s.cfg.Instances == nil {
		return alive, nil
	}
	ids, err := s.cfg.Instances.LiveInstances(ctx, s.cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("list live servers: %w", err)
	}
	for _, id := range ids {
		alive[id] = true
	}
	return alive, nil
}
