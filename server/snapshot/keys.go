package snapshot

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Keys are content addresses, so snapshots of the same state share the
// driver's data under one key, and the data goes with the last snapshot
// holding it. The database orders "a snapshot keeps or writes the data
// under key K and will record it" against "no snapshot holds K: delete
// its data", across every server sharing the store and the driver's
// directory (the kube driver's replicas): a snapshot claims K on its
// pending row (model.SnapshotStore.ClaimSnapshotKey) before the driver
// relies on what is stored under K, and a drop records itself in the
// critical section where it finds K unused (BeginSnapshotDrop). A drop
// that comes after a claim finds K in use and deletes nothing; a claim
// that comes after a drop began waits for the drop to end and writes the
// data anew (session 22; before it, a lock per process left replicas
// free to record a snapshot on data deleted under it).

// dropLease bounds how long a drop holds its key against claims: its end
// comes after one unlink, and the lease only matters for a server that
// died in the middle of one.
const dropLease = time.Minute

// claimPoll is how often a snapshot whose key is being dropped asks again.
const claimPoll = 20 * time.Millisecond

// copyAndRecord copies sb's state into the driver's store (and the
// bucket) for pending snapshot sn and records the outcome: err is the
// copy's failure, stored the bucket's, uerr the record's. The row claims
// the key before the driver keeps or writes data under it; copied runs
// once the driver is done with the sandbox.
func (s *Service) copyAndRecord(ctx context.Context, sb *model.Sandbox, sn *model.Snapshot, copied func()) (
	ref model.SnapshotRef, done *model.Snapshot, err, stored, uerr error,
) {
	var claimed string
	notPending := false
	ref, err = s.cfg.Driver.Snapshot(ctx, sb.ID, false, func(key string) error {
		if err := s.claim(ctx, sn.ID, key); err != nil {
			notPending = errors.Is(err, model.ErrNotFound)
			return err
		}
		claimed = key
		return nil
	})
	copied()
	if p := s.porter(); err == nil && p != nil {
		if stored = s.upload(ctx, p, sn, ref.Key); stored != nil {
			err = stored
		}
	}
	done, uerr = s.cfg.Store.UpdateSnapshot(ctx, sn.ID, func(sn *model.Snapshot) error {
		if err != nil {
			sn.Status, sn.Key = api.SnapshotFailed, "" // the claim let go
			return nil
		}
		if sn.Status != api.SnapshotPending {
			return errFailedMeanwhile
		}
		sn.Status, sn.Key, sn.SizeBytes, sn.Method = api.SnapshotCompleted, ref.Key, ref.SizeBytes, ref.Method
		sn.MountPoints = ref.MountPoints
		return nil
	})
	if notPending && uerr == nil && done.DeletedAt == nil {
		// Marked failed during the copy, before its claim: the same
		// answer as after it, not the driver's failure.
		err = errFailedMeanwhile
	}
	if err != nil && stored == nil && uerr == nil && claimed != "" {
		// The driver failed after the claim: what it left under the key
		// goes unless another snapshot holds it.
		s.dropData(ctx, claimed)
	}
	return ref, done, err, stored, uerr
}

// errFailedMeanwhile is the completion's refusal of a snapshot no longer
// pending: a server sharing the database marked it failed meanwhile
// (Reconcile or Sweep, orphans.go: this server's heartbeat had lapsed, so
// it was taken for dead, and the object in the bucket deleted).
var errFailedMeanwhile = api.Errorf(http.StatusConflict, api.CodeConflict,
	"the snapshot was marked failed while it was taken: another server took it for one a crash interrupted (this server's heartbeat in the database had lapsed)").
	WithHint("take the snapshot again")

// claim records key as pending snapshot id's, waiting out a drop of key
// under way.
func (s *Service) claim(ctx context.Context, id, key string) error {
	for {
		err := s.cfg.Store.ClaimSnapshotKey(ctx, id, key, s.cfg.Now())
		if !errors.Is(err, model.ErrSnapshotKeyDropping) {
			return err
		}
		if s.cfg.claimWaits != nil {
			s.cfg.claimWaits()
		}
		t := time.NewTimer(claimPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// dropData deletes the driver's data under key unless a snapshot holds
// it. A failure leaves the data behind, logged.
func (s *Service) dropData(ctx context.Context, key string) {
	if key == "" || s.cfg.Driver == nil {
		return
	}
	now := s.cfg.Now()
	begun, err := s.cfg.Store.BeginSnapshotDrop(ctx, key, now, now.Add(dropLease))
	if err == nil && begun {
		err = s.cfg.Driver.DeleteSnapshot(ctx, key)
		if eerr := s.cfg.Store.EndSnapshotDrop(ctx, key); err == nil {
			err = eerr
		}
	}
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "delete snapshot data", "key", key, "err", err)
	}
}
