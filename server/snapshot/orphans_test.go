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
// each: never this server's own or a live one's; always one whose
// server's heartbeat ended or that has none (a crash, this server's
// previous life); one with no owner (reserved before owners were
// recorded) at start-up only. A sole server (no heartbeats: SQLite)
// takes every other owner for ended.
func TestPendingSnapshotsByOwner(t *testing.T) {
	now := time.Unix(100, 0)
	owners := []string{"self", "live", "ended", "never", ""}
	tests := []struct {
		name  string
		sole  bool
		sweep bool
		want  map[string]string // owner → status after
	}{
		{"start, shared", false, false, map[string]string{
			"self": api.SnapshotPending, "live": api.SnapshotPending, "ended": api.SnapshotFailed,
			"never": api.SnapshotFailed, "": api.SnapshotFailed,
		}},
		{"sweep, shared", false, true, map[string]string{
			"self": api.SnapshotPending, "live": api.SnapshotPending, "ended": api.SnapshotFailed,
			"never": api.SnapshotFailed, "": api.SnapshotPending,
		}},
		{"start, sole", true, false, map[string]string{
			"self": api.SnapshotPending, "live": api.SnapshotFailed, "ended": api.SnapshotFailed,
			"never": api.SnapshotFailed, "": api.SnapshotFailed,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := &memStore{rows: map[string]*model.Snapshot{}}
			hb := &memInstances{}
			hb.beat("live", now.Add(time.Second))
			hb.beat("ended", now) // ends at now: not alive
			cfg := Config{Store: st, Instance: "self", Now: func() time.Time { return now }}
			if !tt.sole {
				cfg.Instances = hb
			}
			s := New(cfg)
			for _, o := range owners {
				sn := &model.Snapshot{ID: "of-" + o, AccountID: "a", Status: api.SnapshotPending, Owner: o}
				if err := st.ReserveSnapshot(ctx, sn, 0); err != nil {
					t.Fatal(err)
				}
			}
			done := &model.Snapshot{ID: "done", AccountID: "a", Status: api.SnapshotCompleted, Owner: "ended"}
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
			for _, o := range owners {
				sn, err := st.Snapshot(ctx, "a", "of-"+o)
				if err != nil {
					t.Fatal(err)
				}
				got[o] = sn.Status
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status by owner (-want +got):\n%s", diff)
			}
			if sn, _ := st.Snapshot(ctx, "a", "done"); sn.Status != api.SnapshotCompleted {
				t.Errorf("a completed snapshot of an ended server became %s", sn.Status)
			}
		})
	}
}
