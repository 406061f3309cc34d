package snapshot

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestLeftovers: what Reconcile (at start-up) and Sweep (after it) delete
// of the driver's data and the bucket's objects. Data no snapshot that is
// not deleted holds (a snapshot deleted while a server that then died
// took it, data with no row at all) goes, and so does an object whose
// snapshot is deleted, failed or unknown; what a completed snapshot, a
// failed one (its data, until it is deleted) or a pending one that
// claimed its key (a take in flight: its data and its object, put before
// its record) holds stays, and so does an object of another shape. A
// leftover goes once found unheld for a take's longest run (5 min, 35
// with a bucket), counted from the first sweep that found it; at once at
// the start of a sole server, when nothing else runs. Data held again
// meanwhile (a new take claimed its key) is kept, and counted anew if it
// is let go again.
func TestLeftovers(t *testing.T) {
	t0 := time.Unix(100000, 0)
	grace := 35 * time.Minute // takeTimeout with a bucket
	deleted := t0.Add(-time.Hour)
	rows := []*model.Snapshot{
		{ID: "deleted-mid-take", Status: api.SnapshotPending, Key: "sha256-lost", Owner: "dead", OwnerToken: 1, DeletedAt: &deleted},
		{ID: "completed", Status: api.SnapshotCompleted, Key: "sha256-kept"},
		{ID: "in-flight", Status: api.SnapshotPending, Key: "sha256-claimed", Owner: "live", OwnerToken: 1, CreatedAt: t0},
		{ID: "failed", Status: api.SnapshotFailed, Key: "sha256-failed"},
	}
	data := []string{"sha256-lost", "sha256-kept", "sha256-claimed", "sha256-failed", "sha256-norow"}
	objects := []string{
		"pfx/snapshots/a/deleted-mid-take/data", "pfx/snapshots/a/completed/data", "pfx/snapshots/a/in-flight/data",
		"pfx/snapshots/a/failed/data", "pfx/snapshots/a/norow/data", "pfx/snapshots/odd", "pfx/other/a/x/data",
	}
	kept := []string{"sha256-claimed", "sha256-failed", "sha256-kept"}
	keptObjects := []string{
		"pfx/other/a/x/data", "pfx/snapshots/a/completed/data", "pfx/snapshots/a/in-flight/data", "pfx/snapshots/odd",
	}
	type sweep struct {
		at    time.Duration // after t0
		start bool          // Reconcile, not Sweep
	}
	tests := []struct {
		name        string
		sole        bool
		sweeps      []sweep
		wantData    []string // what the driver holds after
		wantObjects []string
		wantLists   int
	}{
		{"sweep, first look", false, []sweep{{0, false}}, data, objects, 1},
		{"sweep, before the grace", false, []sweep{{0, false}, {grace - time.Second, false}}, data, objects, 2},
		{"sweep, after the grace", false, []sweep{{0, false}, {grace, false}}, kept, keptObjects, 2},
		{"sweep, looks once a minute", false, []sweep{{0, false}, {59 * time.Second, false}, {time.Minute, false}}, data, objects, 2},
		{"start, shared", false, []sweep{{0, true}}, data, objects, 1},
		{"start then sweep, shared", false, []sweep{{0, true}, {grace, false}}, kept, keptObjects, 2},
		// A sole server's start fails the pending row it did not take
		// (a crash's) and deletes its object; the failed row keeps its
		// data until it is deleted.
		{"start, sole", true, []sweep{{0, true}}, kept, []string{"pfx/other/a/x/data", "pfx/snapshots/a/completed/data", "pfx/snapshots/odd"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := &memStore{rows: map[string]*model.Snapshot{}}
			for _, r := range rows {
				c := *r
				c.AccountID = "a"
				st.rows[r.ID] = &c
			}
			d := &portingDriver{data: map[string][]byte{}}
			for _, k := range data {
				d.data[k] = []byte(k)
			}
			rem := &memRemote{objects: map[string][]byte{}}
			for _, k := range objects {
				rem.objects[k] = []byte(k)
			}
			now := t0
			cfg := Config{Store: st, Driver: d, Control: &fakeControl{}, Remote: rem, RemotePrefix: "pfx", Now: func() time.Time { return now }, Instance: "self"}
			if !tc.sole {
				hb := &memInstances{}
				_, _ = hb.BeatInstance(ctx, "live", 0, t0, t0.Add(100*time.Hour))
				_, _ = hb.BeatInstance(ctx, "self", 0, t0, t0.Add(100*time.Hour))
				cfg.Instances = hb
			}
			s := New(cfg)
			for _, sw := range tc.sweeps {
				now = t0.Add(sw.at)
				var err error
				if sw.start {
					err = s.Reconcile(ctx)
				} else {
					err = s.Sweep(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(slices.Sorted(slices.Values(tc.wantData)), slices.Sorted(maps.Keys(d.data))); diff != "" {
				t.Errorf("the driver's data (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(slices.Sorted(slices.Values(tc.wantObjects)), slices.Sorted(maps.Keys(rem.objects))); diff != "" {
				t.Errorf("the bucket's objects (-want +got):\n%s", diff)
			}
			if rem.lists != tc.wantLists {
				t.Errorf("the bucket was listed %d times, want %d", rem.lists, tc.wantLists)
			}
		})
	}
}

// TestLeftoverHeldAgain: data found unheld, then claimed by a new take of
// the same state before the grace ran out, is kept; let go again (that
// snapshot deleted, its own drop failed), it is counted from the sweep
// that found it unheld again, not from the first.
func TestLeftoverHeldAgain(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(100000, 0)
	grace := 5 * time.Minute // takeTimeout without a bucket
	st := &memStore{rows: map[string]*model.Snapshot{}}
	d := &fakeDriver{stored: map[string]bool{"sha256-same": true}}
	now := t0
	hb := &memInstances{}
	s := New(Config{Store: st, Driver: d, Control: &fakeControl{}, Now: func() time.Time { return now }, Instances: hb, Instance: "self"})
	sweep := func(at time.Duration) {
		t.Helper()
		now = t0.Add(at)
		if err := s.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sweep(0)
	st.rows["new"] = &model.Snapshot{ID: "new", AccountID: "a", Status: api.SnapshotPending, Owner: "self"}
	if err := st.ClaimSnapshotKey(ctx, "new", "sha256-same", now); err != nil {
		t.Fatal(err)
	}
	sweep(time.Minute)
	sweep(grace)
	if !d.has("sha256-same") {
		t.Fatal("the sweep deleted data a pending snapshot claimed")
	}
	deleted := now
	st.rows["new"].DeletedAt = &deleted
	sweep(grace + time.Minute)
	sweep(grace + 2*time.Minute)
	if !d.has("sha256-same") {
		t.Fatal("the sweep deleted data let go a minute ago, counting from when it was first unheld")
	}
	sweep(2*grace + time.Minute)
	if d.has("sha256-same") {
		t.Error("the data let go stays a grace after")
	}
}

// fakeDriver lists its store (model.SnapshotLister).
func (d *fakeDriver) SnapshotKeys(context.Context) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.stored)), nil
}
