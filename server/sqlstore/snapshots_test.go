package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// testSnapshots: the limit counts pending and completed snapshots of the
// account only, grants round-trip, a deleted snapshot is found by nothing, another
// account's is not found, keys shared by snapshots stay in use until the
// last is deleted, and a paused sandbox round-trips with its processes.
func testSnapshots(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t)
	ctx := t.Context()
	a, b := mustAccount(t, st, "a@example.com"), mustAccount(t, st, "b@example.com")
	snap := func(acct *model.Account, key string, at time.Time) *model.Snapshot {
		return &model.Snapshot{
			ID: model.NewID(), AccountID: acct.ID, SandboxID: "sb-" + acct.Email, Status: api.SnapshotCompleted,
			Key: key, SizeBytes: 42, Method: "reflink", Size: api.SizeSmall, StorageGB: 1.5, CreatedAt: at,
		}
	}
	s1, s2 := snap(a, "k1", base), snap(a, "k1", base.Add(time.Second))
	s1.Grants = model.Grants{ // s2's none round-trip too ('')
		Secrets: []model.SecretGrant{{Name: "TOKEN", SecretID: "sec-1"}, {Name: "ü", SecretID: "sec-2"}},
		Egress:  []string{"api.example.com:443"},
	}
	s1.MountPoints = []string{"/workspace/shared", "/workspace/ü/x"}
	for _, sn := range []*model.Snapshot{s1, s2} {
		if err := st.ReserveSnapshot(ctx, sn, 2); err != nil {
			t.Fatalf("ReserveSnapshot: %v", err)
		}
	}
	var le *model.SnapshotLimitError
	if err := st.ReserveSnapshot(ctx, snap(a, "k2", base), 2); !errors.As(err, &le) || le.Count != 2 || le.Limit != 2 {
		t.Errorf("a third snapshot under a limit of 2: %v", err)
	}
	if err := st.ReserveSnapshot(ctx, snap(b, "k3", base), 2); err != nil {
		t.Errorf("B's first snapshot: %v", err)
	}
	got, err := st.Snapshot(ctx, a.ID, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s1, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Mount points are recorded once the copy is done (UpdateSnapshot).
	if _, err := st.UpdateSnapshot(ctx, s2.ID, func(sn *model.Snapshot) error {
		sn.MountPoints = []string{"/workspace/v"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Snapshot(ctx, a.ID, s2.ID); err != nil || !cmp.Equal(got.MountPoints, []string{"/workspace/v"}) {
		t.Errorf("mount points after UpdateSnapshot: %v, %v", got, err)
	}
	if _, err := st.Snapshot(ctx, b.ID, s1.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("B reading A's snapshot: %v, want ErrNotFound", err)
	}
	list, err := st.ListSnapshots(ctx, a.ID, "")
	if err != nil || len(list) != 2 || list[0].ID != s2.ID {
		t.Errorf("ListSnapshots = %v, %v; want s2, s1", list, err)
	}
	now := base.Add(time.Hour)
	if _, err := st.UpdateSnapshot(ctx, s1.ID, func(sn *model.Snapshot) error { sn.DeletedAt = &now; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Snapshot(ctx, a.ID, s1.ID); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("a deleted snapshot: %v, want ErrNotFound", err)
	}
	if begun, err := st.BeginSnapshotDrop(ctx, "k1", now, now.Add(time.Minute)); err != nil || begun {
		t.Errorf("a drop of k1 after one of two deleted: %v, %v; want in use", begun, err)
	}
	if _, err := st.UpdateSnapshot(ctx, s2.ID, func(sn *model.Snapshot) error { sn.DeletedAt = &now; return nil }); err != nil {
		t.Fatal(err)
	}
	if begun, err := st.BeginSnapshotDrop(ctx, "k1", now, now.Add(time.Minute)); err != nil || !begun {
		t.Errorf("a drop of k1 after both deleted: %v, %v; want begun", begun, err)
	} else if err := st.EndSnapshotDrop(ctx, "k1"); err != nil {
		t.Error(err)
	}
	if err := st.ReserveSnapshot(ctx, snap(a, "k4", base), 2); err != nil {
		t.Errorf("a snapshot once the others were deleted: %v", err)
	}

	// A paused sandbox, with the processes a filesystem pause recorded.
	sb := mustSandbox(t, st, newSandbox(a, base))
	paused, err := st.UpdateSandbox(ctx, sb.ID, func(s *model.Sandbox) error {
		s.Status, s.PausedWith, s.PausedAt = api.StatusPaused, api.PauseFilesystem, &now
		s.PausedProcesses = []api.ProcessInfo{{ProcessID: "proc_1", Command: "sleep 9", Status: api.ProcessRunning, Restart: true, StartedAt: base}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.SandboxByID(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(paused, again); diff != "" {
		t.Errorf("paused sandbox round trip (-want +got):\n%s", diff)
	}
	if pausedRows, err := st.SandboxesWithStatus(ctx, api.StatusPaused); err != nil || len(pausedRows) != 1 {
		t.Errorf("SandboxesWithStatus(paused) = %v, %v", pausedRows, err)
	}
	if n, err := st.CountActiveSandboxes(ctx, a.ID); err != nil || n != 0 {
		t.Errorf("CountActiveSandboxes counts a paused sandbox: %d, %v", n, err)
	}
}
