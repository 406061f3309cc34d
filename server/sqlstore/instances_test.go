package sqlstore_test

import (
	"errors"
	"fmt"
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
// once it ended before the time given; its lease's token stays while it
// is renewed before its end and grows when it is taken again after its
// end or after its row went. A snapshot's owner and owner token are kept
// from its reservation on, by its updates too, and read by the other
// handle; the owner's finishing write (FinishSnapshot) holds only while
// the owner's lease runs under the row's token.
func testInstances(t *testing.T, newStore storeFactory) {
	one, two := twoServers(t, newStore)
	ctx := t.Context()
	live := func(st model.Store, now int) map[string]int64 {
		t.Helper()
		ids, err := st.LiveInstances(ctx, after(now))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	tokens := map[string]int64{} // the last token each instance got
	beat := func(st model.Store, id string, now, until int) {
		t.Helper()
		token, err := st.BeatInstance(ctx, id, tokens[id], after(now), after(until))
		if err != nil {
			t.Fatal(err)
		}
		tokens[id] = token
	}
	steps := []struct {
		name string
		do   func()
		now  int
		want map[string]int64
	}{
		{"none at first", func() {}, 0, map[string]int64{}},
		{"both beat", func() { beat(one, "s1", 0, 30); beat(two, "s2", 0, 30) }, 0, map[string]int64{"s1": 1, "s2": 1}},
		{"alive up to its end", func() {}, 29, map[string]int64{"s1": 1, "s2": 1}},
		{"s1 renews before its end, s2 ends unrenewed", func() { beat(one, "s1", 20, 50) }, 30, map[string]int64{"s1": 1}},
		{"s2 comes back: a new token", func() { beat(two, "s2", 40, 70) }, 40, map[string]int64{"s1": 1, "s2": 2}},
		{"renewed at its very end: a new token", func() { beat(one, "s1", 50, 60) }, 50, map[string]int64{"s1": 2, "s2": 2}},
		{"s1 shuts down cleanly", func() {
			if err := one.EndInstance(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
		}, 51, map[string]int64{"s2": 2}},
		{"an ended one is not forgotten before the time given", func() {
			beat(one, "s3", 41, 45)
			if err := two.ForgetInstances(ctx, after(44)); err != nil {
				t.Fatal(err)
			}
			beat(one, "s3", 44, 80) // renewed: it was still there to renew
		}, 46, map[string]int64{"s2": 2, "s3": 1}},
		{"forgotten once it ended before it", func() {
			if err := two.ForgetInstances(ctx, after(75)); err != nil {
				t.Fatal(err)
			}
		}, 0, map[string]int64{"s3": 1}}, // at 0 s2 (ends at 70, forgotten) would be alive
		{"a forgotten one comes back past its old token", func() { beat(two, "s2", 76, 100) }, 76, map[string]int64{"s2": 3, "s3": 1}},
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

	// The owner's finishing write, fenced by its lease (s2 runs under 3
	// until 100, s3 under 1 until 80).
	fa := mustAccount(t, one, "fence@example.com")
	fences := []struct {
		name         string
		owner        string
		token        int64
		now          int
		wantFinished bool
	}{
		{"its lease, running", "s3", 1, 77, true},
		{"its lease, ended", "s3", 1, 80, false},
		{"its lease taken again since", "s2", 2, 77, false},
		{"its lease, taken again", "s2", 3, 77, true},
		{"an owner gone", "gone", 1, 77, false},
		{"no token: not fenced", "gone", 0, 77, true},
	}
	for i, f := range fences {
		id := fmt.Sprintf("fence-%d", i)
		sn := &model.Snapshot{ID: id, AccountID: fa.ID, SandboxID: "sb", Status: api.SnapshotPending, Owner: f.owner, OwnerToken: f.token, CreatedAt: base}
		if err := one.ReserveSnapshot(ctx, sn, 0); err != nil {
			t.Fatal(err)
		}
		called := false
		_, err := two.FinishSnapshot(ctx, id, after(f.now), func(sn *model.Snapshot) error {
			called = true
			sn.Status = api.SnapshotCompleted
			return nil
		})
		got, rerr := one.Snapshot(ctx, fa.ID, id)
		if rerr != nil {
			t.Fatal(rerr)
		}
		wantStatus, wantErr := api.SnapshotPending, model.ErrOwnerLeaseLost
		if f.wantFinished {
			wantStatus, wantErr = api.SnapshotCompleted, nil
		}
		if !errors.Is(err, wantErr) || called != f.wantFinished || got.Status != wantStatus || got.OwnerToken != f.token {
			t.Errorf("%s: FinishSnapshot = %v (fn called %v), row %s under token %d; want %v, %s under %d",
				f.name, err, called, got.Status, got.OwnerToken, wantErr, wantStatus, f.token)
		}
	}
}
