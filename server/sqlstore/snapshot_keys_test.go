package sqlstore_test

import (
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
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

// TestPostgresSnapshotKeyLock: on Postgres, whose transactions do not take
// turns as SQLite's writers do, a claim of a key that comes while another
// server's drop of it is between finding the key unused and recording
// the drop waits for the drop (the key's advisory lock) and then finds it
// under way; without the lock both went ahead, and the snapshot would be
// completed on data the drop deletes.
func TestPostgresSnapshotKeyLock(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
	}
	ctx := t.Context()
	open := func() *sqlstore.Store {
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	one, two := open(), open()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := mustAccount(t, one, "a@example.com")
	sn := &model.Snapshot{ID: model.NewID(), AccountID: a.ID, SandboxID: "sb", Status: api.SnapshotPending, CreatedAt: base}
	if err := one.ReserveSnapshot(ctx, sn, 0); err != nil {
		t.Fatal(err)
	}
	checked, release := make(chan struct{}), make(chan struct{})
	two.SetDropCheckedForTests(func() {
		close(checked)
		<-release
	})
	type begin struct {
		ok  bool
		err error
	}
	begun := make(chan begin, 1)
	go func() {
		ok, err := two.BeginSnapshotDrop(ctx, "k", base, base.Add(time.Minute))
		begun <- begin{ok, err}
	}()
	select {
	case <-checked:
	case <-time.After(30 * time.Second):
		t.Fatal("the drop never checked its key")
	}
	claimed := make(chan error, 1)
	go func() { claimed <- one.ClaimSnapshotKey(ctx, sn.ID, "k", base) }()
	// The claim waits for the key's lock (or, without one, ends).
	var claimErr error
	done := false
	for deadline := time.Now().Add(30 * time.Second); !done; {
		select {
		case claimErr = <-claimed:
			done = true
			continue
		default:
		}
		var waiting int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim neither waited for the drop nor ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	b := <-begun
	if !done {
		claimErr = <-claimed
	}
	if b.err != nil || !b.ok {
		t.Fatalf("BeginSnapshotDrop = %v, %v; want begun", b.ok, b.err)
	}
	if !errors.Is(claimErr, model.ErrSnapshotKeyDropping) {
		t.Errorf("a claim during the drop's check: %v, want ErrSnapshotKeyDropping (both went ahead)", claimErr)
	}
}
