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
//
// The record is the owner's finishing write, fenced by this server's
// heartbeat lease (FinishSnapshot, orphans.go). When the row is lost to
// this server — deleted by its user meanwhile, failed by another server
// that took this one for dead, or this server's lease lapsed since it
// reserved the row — uerr is the answer for it (409: errDeletedMeanwhile,
// errFailedMeanwhile) and what the take made is removed (abandon).
func (s *Service) copyAndRecord(ctx context.Context, sb *model.Sandbox, sn *model.Snapshot, copied func()) (
	ref model.SnapshotRef, done *model.Snapshot, err, stored, uerr error,
) {
	var claimed string
	ref, err = s.cfg.Driver.Snapshot(ctx, sb.ID, false, func(key string) error {
		if err := s.claim(ctx, sn.ID, key); err != nil {
			return err // ErrNotFound: deleted or failed before the claim
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
	done, uerr = s.cfg.Store.FinishSnapshot(ctx, sn.ID, s.cfg.Now(), func(row *model.Snapshot) error {
		switch {
		case row.DeletedAt != nil:
			return errDeleted // the delete wins
		case row.Status != api.SnapshotPending:
			return errFailedMeanwhile
		case err != nil:
			row.Status, row.Key = api.SnapshotFailed, "" // the claim let go
			return nil
		}
		row.Status, row.Key, row.SizeBytes, row.Method = api.SnapshotCompleted, ref.Key, ref.SizeBytes, ref.Method
		row.MountPoints = ref.MountPoints
		return nil
	})
	switch {
	case errors.Is(uerr, errDeleted):
		s.abandon(ctx, sn, claimed, "deleted by its user")
		return ref, nil, err, stored, errDeletedMeanwhile(sn.ID)
	case errors.Is(uerr, errFailedMeanwhile), errors.Is(uerr, model.ErrOwnerLeaseLost):
		s.abandon(ctx, sn, claimed, "this server's heartbeat lease lapsed")
		return ref, nil, err, stored, errFailedMeanwhile
	}
	if err != nil && stored == nil && uerr == nil && claimed != "" {
		// The driver failed after the claim: what it left under the key
		// goes unless another snapshot holds it.
		s.dropData(ctx, claimed)
	}
	return ref, done, err, stored, uerr
}

// abandon removes what a take made for snapshot sn, whose row it lost
// (why): the row, when still pending (this server's lease lapsed and no
// other server failed it yet, or its user deleted it), is marked failed,
// and it lets go of the
// key it claimed; the driver's data under that key is deleted unless
// another snapshot holds it (the same state's, a content address), and
// the object the take may have put in the bucket is deleted. A failure
// is logged: the data or object stays behind.
func (s *Service) abandon(ctx context.Context, sn *model.Snapshot, claimed, why string) {
	_, err := s.cfg.Store.UpdateSnapshot(ctx, sn.ID, func(row *model.Snapshot) error {
		if row.Status == api.SnapshotCompleted {
			return errNotPending // never: only its owner completes it
		}
		row.Status = api.SnapshotFailed
		if claimed != "" && row.Key == claimed {
			row.Key = ""
		}
		return nil
	})
	if err != nil {
		s.cfg.Log.ErrorContext(ctx, "let go of a lost snapshot's row", "snapshot", sn.ID, "err", err)
		claimed = "" // the row may hold it still
	}
	s.cfg.Log.WarnContext(ctx, "snapshot lost while it was taken: its data removed", "snapshot", sn.ID, "sandbox", sn.SandboxID,
		"why", why, "key", claimed)
	s.dropData(ctx, claimed)
	s.dropPartialRemote(ctx, sn)
}

// errDeleted is the finishing write's refusal of a snapshot deleted
// meanwhile; errDeletedMeanwhile its answer.
var errDeleted = errors.New("the snapshot was deleted while it was taken")

// errDeletedMeanwhile is the answer to a take whose snapshot its user
// deleted (DELETE /v1/snapshots/{id}, listed while pending) before the
// copy ended: the delete wins.
func errDeletedMeanwhile(id string) error {
	return api.Errorf(http.StatusConflict, api.CodeConflict, "snapshot %s was deleted while it was taken", id).
		WithHint("a delete of the snapshot came before its copy ended; take the snapshot again if you still want one")
}

// errFailedMeanwhile is the completion's refusal of a snapshot no longer
// pending: a server sharing the database marked it failed meanwhile
// (Reconcile or Sweep, orphans.go: this server's heartbeat had lapsed, so
// it was taken for dead, and the object in the bucket deleted), or this
// server's lease lapsed since it reserved the row, so it may not complete
// it (FinishSnapshot).
var errFailedMeanwhile = api.Errorf(http.StatusConflict, api.CodeConflict,
	"the snapshot was marked failed while it was taken: this server's heartbeat in the database had lapsed, so it may not complete it (another server may have taken it for one a crash interrupted)").
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
	if _, err := s.drop(ctx, key); err != nil {
		s.cfg.Log.ErrorContext(ctx, "delete snapshot data", "key", key, "err", err)
	}
}

// drop deletes the driver's data under key unless a snapshot holds it
// (or another drop of it is under way), and reports whether it did.
func (s *Service) drop(ctx context.Context, key string) (bool, error) {
	now := s.cfg.Now()
	begun, err := s.cfg.Store.BeginSnapshotDrop(ctx, key, now, now.Add(dropLease))
	if err != nil || !begun {
		return false, err
	}
	err = s.cfg.Driver.DeleteSnapshot(ctx, key)
	if eerr := s.cfg.Store.EndSnapshotDrop(ctx, key); err == nil {
		err = eerr
	}
	return err == nil, err
}
