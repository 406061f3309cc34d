package snapshot

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestPendingSnapshotsByOwner: which pending snapshots Reconcile (at
// start-up) and Sweep (after it) mark failed, by the server that reserved
// each and the token of its heartbeat lease then: never this server's own
// or a live one's under the lease's token now (or with no token: a row of
// an older version); always one reserved under an older token (the lease
// lapsed and was taken again: its owner cannot complete it), or whose
// server's heartbeat ended or that has none (a crash, this server's
// previous life); one with no owner (reserved by a server older than
// owners) at start-up, and at a sweep once it is older than the longest
// take. A sole server (no heartbeats: SQLite) takes every other owner
// for ended.
func TestPendingSnapshotsByOwner(t *testing.T) {
	now := time.Unix(1000, 0)
	type row struct {
		owner string
		token int64
		age   time.Duration
	}
	rows := map[string]row{
		"self":              {"self", 2, 0},
		"self, old token":   {"self", 1, 0},
		"live":              {"live", 2, 0},
		"live, old token":   {"live", 1, 0},
		"live, no token":    {"live", 0, 0},
		"ended":             {"ended", 1, 0},
		"never":             {"never", 1, 0},
		"no owner, young":   {"", 0, 10 * time.Second},
		"no owner, 6 min":   {"", 0, 6 * time.Minute},
		"no owner, at take": {"", 0, 5 * time.Minute},
	}
	const p, f = api.SnapshotPending, api.SnapshotFailed
	tests := []struct {
		name  string
		sole  bool
		sweep bool
		want  map[string]string // row → status after
	}{
		{"start, shared", false, false, map[string]string{
			"self": p, "self, old token": f, "live": p, "live, old token": f, "live, no token": p, "ended": f, "never": f,
			"no owner, young": f, "no owner, 6 min": f, "no owner, at take": f,
		}},
		{"sweep, shared", false, true, map[string]string{
			"self": p, "self, old token": f, "live": p, "live, old token": f, "live, no token": p, "ended": f, "never": f,
			"no owner, young": p, "no owner, 6 min": f, "no owner, at take": p,
		}},
		{"start, sole", true, false, map[string]string{
			// A sole server has no token: its own rows are its own.
			"self": p, "self, old token": p, "live": f, "live, old token": f, "live, no token": f, "ended": f, "never": f,
			"no owner, young": f, "no owner, 6 min": f, "no owner, at take": f,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := &memStore{rows: map[string]*model.Snapshot{}}
			hb := &memInstances{
				until: map[string]time.Time{"live": now.Add(time.Second), "ended": now}, // ends at now: not alive
				token: map[string]int64{"live": 2, "ended": 1},
			}
			cfg := Config{Store: st, Instance: "self", Now: func() time.Time { return now }}
			if !tt.sole {
				cfg.Instances = hb
				cfg.Token = func() int64 { return 2 }
			}
			s := New(cfg)
			for name, r := range rows {
				sn := &model.Snapshot{ID: name, AccountID: "a", Status: api.SnapshotPending, Owner: r.owner, OwnerToken: r.token, CreatedAt: now.Add(-r.age)}
				if err := st.ReserveSnapshot(ctx, sn, 0); err != nil {
					t.Fatal(err)
				}
			}
			done := &model.Snapshot{ID: "done", AccountID: "a", Status: api.SnapshotCompleted, Owner: "ended", CreatedAt: now}
			if err := st.ReserveSnapshot(ctx, done, 0); err != nil {
				t.Fatal(err)
			}
			run := s.Reconcile
			if tt.sweep {
				run = s.Sweep
			}
			if err := run(ctx); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for name := range rows {
				sn, err := st.Snapshot(ctx, "a", name)
				if err != nil {
					t.Fatal(err)
				}
				got[name] = sn.Status
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status by row (-want +got):\n%s", diff)
			}
			if sn, _ := st.Snapshot(ctx, "a", "done"); sn.Status != api.SnapshotCompleted {
				t.Errorf("a completed snapshot of an ended server became %s", sn.Status)
			}
		})
	}
}
