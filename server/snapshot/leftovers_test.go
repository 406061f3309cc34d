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

// partialDriver is a fakeDriver whose store servers share, holding copies
// under way (model.PartialSnapshotLister): held ones a live copy writes,
// the others a dead server's.
type partialDriver struct {
	fakeDriver
	partials map[string]bool // name → held
}

func (d *partialDriver) UnheldPartialSnapshots(context.Context) ([]string, error) {
	var unheld []string
	for name, held := range d.partials {
		if !held {
			unheld = append(unheld, name)
		}
	}
	return unheld, nil
}

func (d *partialDriver) DeletePartialSnapshot(_ context.Context, name string) error {
	if !d.partials[name] {
		delete(d.partials, name)
	}
	return nil
}

// TestPartialLeftovers: the kube driver's partial-* copies that no copy
// holds (a replica that died mid-copy left them in the directory the
// replicas share) go once found unheld for a take's longest run, at once
// at the start of a sole server; one a copy under way holds stays, as do
// the others while the grace runs, with no snapshot row at all. Before,
// they stayed for ever: no start may remove them, and no sweep looked.
func TestPartialLeftovers(t *testing.T) {
	t0 := time.Unix(100000, 0)
	grace := 5 * time.Minute // takeTimeout without a bucket
	all := []string{"partial-dead", "partial-dead-later", "partial-live"}
	tests := []struct {
		name   string
		sole   bool
		sweeps []time.Duration // after t0; the first is Reconcile's
		want   []string
	}{
		{"shared, first look", false, []time.Duration{0}, all},
		{"shared, before the grace", false, []time.Duration{0, grace - time.Second}, all},
		{"shared, after the grace", false, []time.Duration{0, time.Minute, grace}, []string{"partial-dead-later", "partial-live"}},
		{"shared, the later one after its grace", false, []time.Duration{0, time.Minute, grace, grace + time.Minute}, []string{"partial-live"}},
		{"sole, at its start", true, []time.Duration{0}, []string{"partial-dead-later", "partial-live"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := &partialDriver{partials: map[string]bool{"partial-dead": false, "partial-live": true}}
			now := t0
			cfg := Config{Store: &memStore{rows: map[string]*model.Snapshot{}}, Driver: d, Control: &fakeControl{}, Now: func() time.Time { return now }, Instance: "self"}
			if !tc.sole {
				hb := &memInstances{}
				_, _ = hb.BeatInstance(ctx, "self", 0, t0, t0.Add(100*time.Hour))
				cfg.Instances = hb
			}
			s := New(cfg)
			for i, at := range tc.sweeps {
				now = t0.Add(at)
				var err error
				if i == 0 {
					err = s.Reconcile(ctx)
					d.partials["partial-dead-later"] = false // a copy that died after the start
				} else {
					err = s.Sweep(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, slices.Sorted(maps.Keys(d.partials))); diff != "" {
				t.Errorf("the partial copies (-want +got):\n%s", diff)
			}
		})
	}
}
