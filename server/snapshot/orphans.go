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
// taking it (Snapshot.Owner) and the token of that server's heartbeat
// lease then (Snapshot.OwnerToken, session 25). Servers sharing the
// database keep a heartbeat row each (model.InstanceStore, renewed by the
// server's Run); a pending snapshot whose owner's heartbeat ended, or runs
// under another token than the row's (it lapsed and was taken again: the
// owner cannot complete the row any more, FinishSnapshot), or that has no
// owner (reserved by a server older than owners), is one a crash (or a
// lapse) interrupted: Reconcile at start-up and Sweep after it mark it
// failed and delete its partial object in the bucket. A pending snapshot
// of a live server is left to it: a replica that starts no longer fails
// the snapshots another is taking (bench/issue27/session24-snapowner.md).
// A sole server (Config.Instances nil) is the only live one: every
// pending snapshot it did not take in this life is a crash's, as before.

// Reconcile marks failed, at start-up, the pending snapshots of servers
// that are not alive (this server's previous life among them) and those
// with no owner.
// It then deletes the data and objects no snapshot holds (leftovers.go).
func (s *Service) Reconcile(ctx context.Context) error {
	err := s.failOrphans(ctx, true)
	s.sweepLeftovers(ctx, true)
	return err
}

// Sweep marks failed the pending snapshots whose owner's heartbeat ended
// since (a server that died mid-copy) or was taken again under a new
// token, and those with no owner once they are older than the longest a
// take may run (takeTimeout): a server of an older version, during a
// rolling upgrade, may be taking a younger one.
// It then deletes the data and objects no snapshot has held for longer
// than a take may run (leftovers.go).
func (s *Service) Sweep(ctx context.Context) error {
	err := s.failOrphans(ctx, false)
	s.sweepLeftovers(ctx, false)
	return err
}

// errNotPending stops the update of a snapshot that is no longer pending.
var errNotPending = errors.New("the snapshot is no longer pending")

// failOrphans marks failed each pending snapshot whose owner is not
// alive under the row's token, and each with no owner: all of them at
// start, those older than takeTimeout otherwise.
func (s *Service) failOrphans(ctx context.Context, start bool) error {
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
	now := s.cfg.Now()
	for _, sn := range pending {
		if !orphaned(sn, alive, start, now.Sub(sn.CreatedAt) > s.takeTimeout()) {
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
		s.cfg.Log.WarnContext(ctx, "snapshot interrupted by its server's end: failed", "snapshot", sn.ID, "sandbox", sn.SandboxID,
			"owner", sn.Owner, "owner_token", sn.OwnerToken)
		s.dropPartialRemote(ctx, sn)
	}
	return nil
}

// orphaned tells whether pending snapshot sn is one no live server will
// complete: its owner is not alive (alive: id → lease token), or alive
// under another token than the row's; with no owner, at start or once it
// is old (older than the longest take).
func orphaned(sn *model.Snapshot, alive map[string]int64, start, old bool) bool {
	if sn.Owner == "" {
		return start || old
	}
	token, ok := alive[sn.Owner]
	if !ok {
		return true
	}
	// 0: a row or heartbeat without tokens (a sole server, an older
	// version): alive is enough.
	return sn.OwnerToken != 0 && token != 0 && token != sn.OwnerToken
}

// liveInstances is the servers alive now, each with its lease's token:
// this one, and those whose heartbeat runs past now.
func (s *Service) liveInstances(ctx context.Context) (map[string]int64, error) {
	alive := map[string]int64{}
	if s.cfg.Instances != nil {
		live, err := s.cfg.Instances.LiveInstances(ctx, s.cfg.Now())
		if err != nil {
			return nil, fmt.Errorf("list live servers: %w", err)
		}
		alive = live
	}
	if s.cfg.Instance != "" {
		alive[s.cfg.Instance] = s.token() // alive to itself, under its token
	}
	return alive, nil
}

// token is this server's lease token now (Config.Token), 0 without one.
func (s *Service) token() int64 {
	if s.cfg.Token == nil {
		return 0
	}
	return s.cfg.Token()
}
