package sqlstore_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// testInstances: the servers' heartbeats and the owners of pending
// snapshots, through two store handles on one database (two servers; one
// on SQLite, which one server holds alone). A heartbeat is alive until
// its end, renewed by a later beat (also one that ended: a server that
// was taken for dead comes back), ended by EndInstance, and forgotten
// once it ended before the time given; a snapshot's owner is kept from
// its reservation on, by its updates too, and read by the other handle.
func testInstances(t *testing.T, newStore storeFactory) {
	one, two := twoServers(t, newStore)
	ctx := t.Context()
	live := func(st model.Store, now int) []string {
		t.Helper()
		ids, err := st.LiveInstances(ctx, after(now))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	beat := func(st model.Store, id string, until int) {
		t.Helper()
		if err := st.BeatInstance(ctx, id, after(until)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
		now  int
		want []string
	}{
		{"none at first", func() {}, 0, nil},
		{"both beat", func() { beat(one, "s1", 30); beat(two, "s2", 30) }, 0, []string{"s1", "s2"}},
		{"alive up to its end", func() {}, 29, []string{"s1", "s2"}},
		{"s1 renews, s2 ends unrenewed", func() { beat(one, "s1", 50) }, 30, []string{"s1"}},
		{"s2 comes back", func() { beat(two, "s2", 70) }, 40, []string{"s1", "s2"}},
		{"s1 shuts down cleanly", func() {
			if err := one.EndInstance(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
		}, 41, []string{"s2"}},
		{"an ended one is not forgotten before the time given", func() {
			beat(one, "s3", 45)
			if err := two.ForgetInstances(ctx, after(44)); err != nil {
				t.Fatal(err)
			}
			beat(one, "s3", 80) // renewed: it was still there to renew
		}, 46, []string{"s2", "s3"}},
		{"forgotten once it ended before it", func() {
			if err := two.ForgetInstances(ctx, after(75)); err != nil {
				t.Fatal(err)
			}
		}, 0, []string{"s3"}}, // at 0 s2 (ends at 70, forgotten) would be alive
	}
	for _, s := range steps {
		s.do()
		for name, st := range map[string]model.Store{"one": one, "two": two} {
			if diff := cmp.Diff(s.want, live(st, s.now)); diff != "" {
				t.Errorf("%s: LiveInstances at +%ds through %s (-want +got):\n%s", s.name, s.now, name, diff)
			}
		}
	}

	// The owners of pending snapshots.
	a := mustAccount(t, one, "a@example.com")
	for _, owner := range []string{"s1", "s2", ""} {
		sn := &model.Snapshot{ID: "sn-" + owner, AccountID: a.ID, SandboxID: "sb", Status: api.SnapshotPending, Owner: owner, CreatedAt: base}
		if err := one.ReserveSnapshot(ctx, sn, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := one.UpdateSnapshot(ctx, "sn-s2", func(sn *model.Snapshot) error {
		sn.Status, sn.Owner = api.SnapshotFailed, "changed" // the owner is immutable
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pending, err := two.SnapshotsWithStatus(ctx, api.SnapshotPending)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := two.SnapshotsWithStatus(ctx, api.SnapshotFailed)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sn := range slices.Concat(pending, failed) {
		got[sn.ID] = sn.Status + " by " + sn.Owner
	}
	want := map[string]string{"sn-s1": "pending by s1", "sn-": "pending by ", "sn-s2": "failed by s2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshots and their owners (-want +got):\n%s", diff)
	}
}
