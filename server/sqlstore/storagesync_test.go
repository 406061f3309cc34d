package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/storagesync"
)

// testStorageSync: a sync's state round-trips and starts once; the queue
// keeps one row per path and dequeues up to a time; the index of stored
// files is put, replaced, deleted and cleared per sandbox.
func testStorageSync(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(storagesync.Store)
	ctx := t.Context()
	if _, err := st.SyncState(ctx, "sb-none"); !errors.Is(err, storagesync.ErrNoSync) {
		t.Fatalf("SyncState(missing) = %v, want ErrNoSync", err)
	}
	want := &storagesync.State{SandboxID: "sb-1", AccountID: "acct-1", State: storagesync.StateSyncing, CreatedAt: base, NextAttemptAt: base}
	for range 2 {
		if err := st.StartSync(ctx, want); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.StartSync(ctx, &storagesync.State{SandboxID: "sb-2", AccountID: "acct-2", State: storagesync.StateFinal, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	got, err := st.SyncState(ctx, "sb-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	want.LastFlushAt, want.LastError, want.LastErrorAt, want.Attempts = base.Add(time.Second), "boom", base.Add(2*time.Second), 3
	want.NextAttemptAt, want.RetainUntil, want.FinalDone = base.Add(time.Minute), base.Add(time.Hour), true
	if err := st.UpdateSyncState(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateSyncState(ctx, &storagesync.State{SandboxID: "sb-none"}); !errors.Is(err, storagesync.ErrNoSync) {
		t.Errorf("UpdateSyncState(missing) = %v, want ErrNoSync", err)
	}
	for i, p := range []string{"a.txt", "b/c.txt", "a.txt"} {
		if err := st.EnqueueSync(ctx, "sb-1", p, base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = st.SyncState(ctx, "sb-1")
	want.Pending = 2
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after update and enqueue (-want +got):\n%s", d)
	}
	states, err := st.SyncStates(ctx, storagesync.StateSyncing)
	if err != nil || len(states) != 1 || states[0].SandboxID != "sb-1" || states[0].Pending != 2 {
		t.Errorf("SyncStates(syncing) = %+v, %v", states, err)
	}
	if q, err := st.QueuedSync(ctx, "sb-1"); err != nil || !cmp.Equal(q, []string{"a.txt", "b/c.txt"}) {
		t.Errorf("QueuedSync = %q, %v", q, err)
	}
	// b/c.txt was queued at base+1s, a.txt again at base+2s.
	if err := st.DequeueSync(ctx, "sb-1", base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.SyncState(ctx, "sb-1"); got.Pending != 1 {
		t.Errorf("pending after dequeue = %d, want 1", got.Pending)
	}
	f1 := storagesync.Synced{Path: "a.txt", Size: 5, MtimeNS: 1_700_000_000_123_456_789, SyncedAt: base}
	f2 := storagesync.Synced{Path: "d/ü.bin", Size: 50 << 20, MtimeNS: 42, SyncedAt: base}
	if err := st.PutSynced(ctx, "sb-1", []storagesync.Synced{f1, f2}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSynced(ctx, "sb-2", []storagesync.Synced{f1}); err != nil {
		t.Fatal(err)
	}
	f1.Size = 6
	if err := st.PutSynced(ctx, "sb-1", []storagesync.Synced{f1}); err != nil {
		t.Fatal(err)
	}
	files, err := st.SyncedFiles(ctx, "sb-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]storagesync.Synced{"a.txt": f1, "d/ü.bin": f2}, files); d != "" {
		t.Errorf("SyncedFiles (-want +got):\n%s", d)
	}
	if err := st.DeleteSynced(ctx, "sb-1", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if files, _ := st.SyncedFiles(ctx, "sb-1"); len(files) != 1 {
		t.Errorf("after delete: %v", files)
	}
	// Several at once (a refill's check), one of them not recorded.
	if err := st.PutSynced(ctx, "sb-1", []storagesync.Synced{f1}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSynced(ctx, "sb-1", "a.txt", "d/ü.bin", "never.txt"); err != nil {
		t.Fatal(err)
	}
	if files, _ := st.SyncedFiles(ctx, "sb-1"); len(files) != 0 {
		t.Errorf("after deleting both: %v", files)
	}
	if err := st.PutSynced(ctx, "sb-1", []storagesync.Synced{f2}); err != nil {
		t.Fatal(err)
	}
	if err := st.ClearSynced(ctx, "sb-1"); err != nil {
		t.Fatal(err)
	}
	if files, _ := st.SyncedFiles(ctx, "sb-1"); len(files) != 0 {
		t.Errorf("after clear: %v", files)
	}
	if got, _ := st.SyncState(ctx, "sb-1"); got.Pending != 0 {
		t.Errorf("pending after clear = %d", got.Pending)
	}
	if files, _ := st.SyncedFiles(ctx, "sb-2"); len(files) != 1 {
		t.Errorf("clearing sb-1 touched sb-2: %v", files)
	}
}
