package sqlstore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// twoServers opens the database of newStore twice, as two servers do
// (Postgres), or once for both where one server holds it alone (SQLite:
// ErrInUse).
func twoServers(t *testing.T, newStore storeFactory) (one, two model.Store) {
	open := newStore(t)
	one = open(t)
	if s, ok := one.(interface{ Shared() bool }); ok && s.Shared() {
		return one, open(t)
	}
	return one, one
}

// testSnapshotKeyClaims: a claim of a snapshot key and a drop of it, made
// through two store handles on one database (two servers; one on SQLite,
// which one server holds alone), take turns. A
// claim committed first makes the drop find the key in use; a drop begun
// first makes the claim wait (ErrSnapshotKeyDropping) until it ended or
// its lease passed; two drops of one key do not both begin; only a
// pending snapshot claims; a failed snapshot that let its key go frees it.
func testSnapshotKeyClaims(t *testing.T, newStore storeFactory) {
	one, two := twoServers(t, newStore)
	ctx := t.Context()
	a := mustAccount(t, one, "a@example.com")
	pending := func(key string) *model.Snapshot {
		sn := &model.Snapshot{ID: model.NewID(), AccountID: a.ID, SandboxID: "sb", Status: api.SnapshotPending, Key: key, CreatedAt: base}
		if err := one.ReserveSnapshot(ctx, sn, 0); err != nil {
			t.Fatal(err)
		}
		return sn
	}
	now, lease := base, base.Add(time.Minute)
	begin := func(st model.Store, key string, at time.Time) bool {
		t.Helper()
		ok, err := st.BeginSnapshotDrop(ctx, key, at, at.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// Claim first, on one server: the other's drop finds the key held.
	claimer := pending("")
	if err := one.ClaimSnapshotKey(ctx, claimer.ID, "k1", now); err != nil {
		t.Fatalf("ClaimSnapshotKey: %v", err)
	}
	if begin(two, "k1", now) {
		t.Error("a drop began on a key a pending snapshot claimed")
	}
	if got, err := one.SnapshotsWithStatus(ctx, api.SnapshotPending); err != nil || len(got) != 1 || got[0].Key != "k1" {
		t.Errorf("the pending snapshot after its claim: %v, %v", got, err)
	}

	// Drop first: the claim waits for its end, and a second drop does
	// not begin meanwhile.
	if !begin(two, "k2", now) {
		t.Fatal("a drop of a key nothing holds did not begin")
	}
	if begin(one, "k2", now) {
		t.Error("a second drop of a key began while the first was under way")
	}
	late := pending("")
	if err := one.ClaimSnapshotKey(ctx, late.ID, "k2", now); !errors.Is(err, model.ErrSnapshotKeyDropping) {
		t.Errorf("a claim during a drop: %v, want ErrSnapshotKeyDropping", err)
	}
	if err := two.EndSnapshotDrop(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
	if err := one.ClaimSnapshotKey(ctx, late.ID, "k2", now); err != nil {
		t.Errorf("a claim once the drop ended: %v", err)
	}
	if begin(two, "k2", now) {
		t.Error("a drop began on a key claimed after the last drop")
	}

	// A drop whose server died holds the key until its lease ends.
	if !begin(two, "k3", now) {
		t.Fatal("a drop of k3 did not begin")
	}
	orphan := pending("")
	if err := one.ClaimSnapshotKey(ctx, orphan.ID, "k3", lease.Add(-time.Microsecond)); !errors.Is(err, model.ErrSnapshotKeyDropping) {
		t.Errorf("a claim within the drop's lease: %v, want ErrSnapshotKeyDropping", err)
	}
	if err := one.ClaimSnapshotKey(ctx, orphan.ID, "k3", lease); err != nil {
		t.Errorf("a claim once the drop's lease ended: %v", err)
	}
	if begin(two, "k3", lease) {
		t.Error("a drop began on a key claimed after a dead drop's lease")
	}

	// Only a pending snapshot claims; one that failed and let its key go
	// frees it, and so does a deleted one.
	if _, err := two.UpdateSnapshot(ctx, orphan.ID, func(sn *model.Snapshot) error {
		sn.Status, sn.Key = api.SnapshotFailed, ""
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := one.ClaimSnapshotKey(ctx, orphan.ID, "k3", lease); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("a claim by a failed snapshot: %v, want ErrNotFound", err)
	}
	if err := one.ClaimSnapshotKey(ctx, model.NewID(), "k3", lease); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("a claim by no snapshot: %v, want ErrNotFound", err)
	}
	if !begin(one, "k3", lease) {
		t.Error("a drop did not begin on a key whose only snapshot failed and let it go")
	}
	deleted := base.Add(time.Hour)
	if _, err := two.UpdateSnapshot(ctx, claimer.ID, func(sn *model.Snapshot) error { sn.DeletedAt = &deleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if !begin(one, "k1", now) {
		t.Error("a drop did not begin on a key whose only snapshot was deleted")
	}
}

// testSnapshotKeyRace: claims and drops of one key from two store handles
// at once never overlap: no claim commits while a drop that began is
// under way, and no drop begins while a committed claim holds the key.
// The counters undercount (a claim counts once committed, a drop until
// just before it ends), so an overlap they see is a real one.
func testSnapshotKeyRace(t *testing.T, newStore storeFactory) {
	one, two := twoServers(t, newStore)
	stores := []model.Store{one, two}
	ctx := t.Context()
	a := mustAccount(t, stores[0], "a@example.com")
	const key, rounds = "k", 20
	var claims, drops atomic.Int32
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Go(func() { // claims: a pending snapshot claims, then is deleted
			for range rounds {
				sn := &model.Snapshot{ID: model.NewID(), AccountID: a.ID, SandboxID: "sb", Status: api.SnapshotPending, CreatedAt: base}
				if err := st.ReserveSnapshot(ctx, sn, 0); err != nil {
					t.Error(err)
					return
				}
				err := st.ClaimSnapshotKey(ctx, sn.ID, key, base)
				if err == nil {
					claims.Add(1)
					if drops.Load() > 0 {
						t.Errorf("store %d: a claim committed during a drop", i)
					}
					claims.Add(-1)
				} else if !errors.Is(err, model.ErrSnapshotKeyDropping) {
					t.Error(err)
				}
				now := base
				if _, err := st.UpdateSnapshot(ctx, sn.ID, func(sn *model.Snapshot) error { sn.DeletedAt = &now; return nil }); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() { // drops
			for range rounds {
				ok, err := st.BeginSnapshotDrop(ctx, key, base, base.Add(time.Minute))
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				drops.Add(1)
				if claims.Load() > 0 {
					t.Errorf("store %d: a drop began while a claim held the key", i)
				}
				drops.Add(-1)
				if err := st.EndSnapshotDrop(ctx, key); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
