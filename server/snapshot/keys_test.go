package snapshot

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// keysEnv is a snapshot service taking snapshots (taker) and one deleting
// them (deleter), sharing one store and one driver's directory: the same
// service on one server, two on two servers (the kube driver's replicas
// sharing the database and StateDir/snapshots).
type keysEnv struct {
	st             *memStore
	hb             *memInstances // the servers' heartbeats: none alive at first
	d              *fakeDriver
	taker, deleter *Service
	acct           *model.Account
	sb             *model.Sandbox
}

func newKeysEnv(t *testing.T, servers int, claimWaits func()) *keysEnv {
	t.Helper()
	e := &keysEnv{
		st: &memStore{rows: map[string]*model.Snapshot{}}, hb: &memInstances{}, d: &fakeDriver{},
		acct: &model.Account{ID: "a"}, sb: &model.Sandbox{ID: "sb", AccountID: "a", Status: api.StatusActive},
	}
	e.st.inst = e.hb
	cfg := Config{Store: e.st, Driver: e.d, Control: &fakeControl{}, Now: func() time.Time { return time.Unix(0, 0) }, Instances: e.hb}
	cfg.Instance = "deleter"
	e.deleter = New(cfg)
	cfg.claimWaits = claimWaits
	cfg.Instance = "taker"
	cfg.Token = func() int64 { return e.hb.tokenOf("taker") }
	e.taker = New(cfg)
	if servers == 1 {
		e.deleter = e.taker
	}
	return e
}

// check fails t unless sn completed on key sha256-same and the driver
// still holds its data.
func (e *keysEnv) check(t *testing.T, sn *model.Snapshot, err error) {
	t.Helper()
	if err != nil || sn.Status != api.SnapshotCompleted || sn.Key != "sha256-same" {
		t.Fatalf("Take = %+v, %v", sn, err)
	}
	if !e.d.has(sn.Key) {
		e.d.mu.Lock()
		defer e.d.mu.Unlock()
		t.Errorf("snapshot %s completed on key %s, whose data the driver deleted (deleted %v)", sn.ID, sn.Key, e.d.deleted)
	}
}

// TestDeleteDuringIdenticalSnapshot: the delete of the last snapshot
// holding a key, while a snapshot of the same state (the same key) is
// being taken, never leaves the new snapshot completed on deleted data,
// whether the delete runs on the same server or on another sharing the
// store and the directory. A snapshot that claimed the key first keeps the
// data (the delete finds the key in use: session 20's state20 had the new
// snapshot recorded on data deleted under it, one server; session 21's
// lock per process left two servers that hole); a delete that began first
// ends before the snapshot claims the key, which then writes it anew.
func TestDeleteDuringIdenticalSnapshot(t *testing.T) {
	ctx := context.Background()
	for _, servers := range []int{1, 2} {
		t.Run(map[int]string{1: "one server", 2: "two servers"}[servers], func(t *testing.T) {
			t.Run("claim first", func(t *testing.T) {
				e := newKeysEnv(t, servers, nil)
				old, err := e.taker.Take(ctx, e.acct, e.sb, "old")
				if err != nil {
					t.Fatal(err)
				}
				// The new snapshot claimed the key and keeps the stored
				// data: the delete of the old one, run to its end now,
				// must leave it.
				e.d.kept = func() {
					e.d.kept = nil
					if err := e.deleter.Delete(ctx, old); err != nil {
						t.Error(err)
					}
				}
				sn, err := e.taker.Take(ctx, e.acct, e.sb, "new")
				e.check(t, sn, err)
				if len(e.d.deleted) != 0 {
					t.Errorf("the driver deleted %v, which the new snapshot holds", e.d.deleted)
				}
			})
			t.Run("drop first", func(t *testing.T) {
				waiting, release, entered := make(chan struct{}), make(chan struct{}), make(chan struct{})
				var once sync.Once
				e := newKeysEnv(t, servers, func() { once.Do(func() { close(waiting) }) })
				old, err := e.taker.Take(ctx, e.acct, e.sb, "old")
				if err != nil {
					t.Fatal(err)
				}
				// The delete found the key unused and is about to delete
				// its data when the new snapshot wants to claim it.
				e.d.deleting = func() {
					close(entered)
					<-release
				}
				deleted := make(chan error, 1)
				go func() { deleted <- e.deleter.Delete(ctx, old) }()
				await(t, entered, "the delete to reach the driver")
				type result struct {
					sn  *model.Snapshot
					err error
				}
				taken := make(chan result, 1)
				go func() {
					sn, err := e.taker.Take(ctx, e.acct, e.sb, "new")
					taken <- result{sn, err}
				}()
				// The claim found the drop under way (or, without claims,
				// the snapshot completed on the data about to go).
				select {
				case <-waiting:
				case r := <-taken:
					close(release)
					<-deleted
					e.check(t, r.sn, r.err)
					t.Fatal("the snapshot completed while the delete of its key's data was under way")
				case <-time.After(30 * time.Second):
					t.Fatal("the snapshot never waited for the drop of its key")
				}
				close(release)
				if err := <-deleted; err != nil {
					t.Fatal(err)
				}
				r := <-taken
				e.check(t, r.sn, r.err)
			})
		})
	}
}

// await waits for ch, failing t after a generous hang guard.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestSnapshotFailedByAnotherServersStart: a server sharing the database
// that starts while a snapshot is taken leaves it to its server while
// that one's heartbeat is alive, and the snapshot completes (before
// session 24 every start failed every pending snapshot); when its
// server's heartbeat had ended (a server taken for dead), the start marks
// it failed and deletes its object in the bucket, and the snapshot then
// answers 409 and stays failed instead of being completed over the
// failed row (on an object the start deleted); the taking server lets go
// of the key it claimed, whose data goes with the last snapshot holding
// it (session 25: the failed row held it until its own delete).
func TestSnapshotFailedByAnotherServersStart(t *testing.T) {
	ctx := context.Background()
	t.Run("its server alive", func(t *testing.T) {
		e := newKeysEnv(t, 2, nil)
		e.hb.beat("taker", time.Unix(30, 0))
		if _, err := e.taker.Take(ctx, e.acct, e.sb, "old"); err != nil {
			t.Fatal(err)
		}
		reconciled := false
		e.d.kept = func() {
			e.d.kept = nil
			reconciled = true
			if err := e.deleter.Reconcile(ctx); err != nil {
				t.Error(err)
			}
		}
		sn, err := e.taker.Take(ctx, e.acct, e.sb, "new")
		if !reconciled {
			t.Fatal("the other server's start did not run during the copy")
		}
		e.check(t, sn, err)
	})
	t.Run("its server taken for dead", func(t *testing.T) {
		e := newKeysEnv(t, 2, nil)
		e.hb.beat("taker", time.Unix(30, 0))
		old, err := e.taker.Take(ctx, e.acct, e.sb, "old")
		if err != nil {
			t.Fatal(err)
		}
		e.d.kept = func() {
			e.d.kept = nil
			e.hb.lapse("taker") // ended at the deleter's now
			if err := e.deleter.Reconcile(ctx); err != nil {
				t.Error(err)
			}
		}
		sn, err := e.taker.Take(ctx, e.acct, e.sb, "new")
		if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusConflict || ae.Message != errFailedMeanwhile.Message {
			t.Fatalf("Take after another server's start failed it = %+v, %v; want 409 %q", sn, err, errFailedMeanwhile.Message)
		}
		failed, err := e.st.SnapshotsWithStatus(ctx, api.SnapshotFailed)
		if err != nil || len(failed) != 1 || failed[0].Key != "" {
			t.Fatalf("failed snapshots = %+v, %v; want the new one, holding no key", failed, err)
		}
		// The old one holds the data; its delete drops it.
		if !e.d.has("sha256-same") {
			t.Error("the failed take dropped the data the old snapshot holds")
		}
		if err := e.deleter.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		if e.d.has("sha256-same") {
			t.Error("the old snapshot's delete kept the data")
		}
	})
}

// TestSnapshotOfLapsedLease: a server whose heartbeat lease lapsed while
// it took a snapshot may not complete it, even when no other server
// failed it yet (FinishSnapshot's fence: another may be failing it now):
// the take answers 409, marks the row failed, lets go of its key and
// drops the data it wrote (no other snapshot holds it), and audits no
// snapshot. Once its heartbeat is taken again (a new token) its takes
// complete.
func TestSnapshotOfLapsedLease(t *testing.T) {
	ctx := context.Background()
	e := newKeysEnv(t, 1, nil)
	ctl := &fakeControl{}
	e.taker.cfg.Control = ctl
	e.hb.beat("taker", time.Unix(30, 0))
	e.d.claimed = func() { e.hb.lapse("taker") }
	sn, err := e.taker.Take(ctx, e.acct, e.sb, "lapsed")
	if ae, ok := errors.AsType[*api.Error](err); !ok || ae.Status != http.StatusConflict || ae.Message != errFailedMeanwhile.Message {
		t.Fatalf("Take whose lease lapsed = %+v, %v; want 409 %q", sn, err, errFailedMeanwhile.Message)
	}
	failed, err := e.st.SnapshotsWithStatus(ctx, api.SnapshotFailed)
	if err != nil || len(failed) != 1 || failed[0].Key != "" || failed[0].OwnerToken != 1 {
		t.Fatalf("failed snapshots = %+v, %v; want the lapsed one, under token 1, holding no key", failed, err)
	}
	if e.d.has("sha256-same") {
		t.Error("the lapsed take left its data behind")
	}
	if len(ctl.audits) != 0 {
		t.Errorf("audits = %v, want none", ctl.audits)
	}

	e.d.claimed = nil
	e.hb.beat("taker", time.Unix(30, 0)) // taken again: token 2
	sn, err = e.taker.Take(ctx, e.acct, e.sb, "after")
	e.check(t, sn, err)
	if sn.OwnerToken != 2 {
		t.Errorf("the take after the lapse ran under token %d, want 2", sn.OwnerToken)
	}
}
