//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/model"
)

// newCloneDriver is a root driver whose disks live on the XFS clone pool,
// in a short state directory (unix socket paths must stay short).
func newCloneDriver(t testing.TB) *Driver {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the clone pool needs root")
	}
	dir, err := os.MkdirTemp("", "bxs-")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, Clones: ClonesXFS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		os.RemoveAll(dir)
	})
	return d
}

// TestSnapshotRestoreFork snapshots a sandbox holding a 100 MiB file,
// changes it, restores the snapshot into a new sandbox (byte-exact, the
// parent's later changes absent), and forks the parent 8 ways: every
// child has the parent's files, a write in one is seen by no other, and
// the clone pool grows by less than 2 × 100 MiB for all 8 (issue 22,
// acceptance 1 and 3, at the driver). About 15 s, most of it writing and
// hashing 100 MiB.
func TestSnapshotRestoreFork(t *testing.T) {
	d := newCloneDriver(t)
	if d.data == d.cfg.StateDir {
		t.Fatal("no clone pool")
	}
	parent := create(t, d, "parent")
	res := run(t, parent, "head -c 100M /dev/urandom > /workspace/big && echo one > /workspace/small && sha256sum /workspace/big")
	if res.ExitCode != 0 {
		t.Fatalf("write: %+v", res)
	}
	bigSum, _, _ := strings.Cut(res.Stdout, " ")

	snap, err := d.Snapshot(context.Background(), "parent", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(snap.Key, "sha256-") || snap.Method != "reflink" || snap.SizeBytes < 100<<20 {
		t.Errorf("snapshot %+v, want a content-addressed reflink of at least 100 MiB", snap)
	}
	if res := run(t, parent, "rm /workspace/big && echo two > /workspace/small"); res.ExitCode != 0 {
		t.Fatalf("change: %+v", res)
	}

	restored := createFrom(t, d, "restored", snap.Key)
	res = run(t, restored, "sha256sum /workspace/big && cat /workspace/small && stat -c %u /workspace/small")
	if want := bigSum + "  /workspace/big\none\n1001\n"; res.Stdout != want {
		t.Errorf("restored sandbox: %q, want %q", res.Stdout, want)
	}
	// The parent is gone; the snapshot is not.
	if err := d.Delete(context.Background(), "parent"); err != nil {
		t.Fatal(err)
	}
	again := createFrom(t, d, "again", snap.Key)
	if res := run(t, again, "sha256sum /workspace/big"); !strings.HasPrefix(res.Stdout, bigSum) {
		t.Errorf("restored after the parent was deleted: %+v", res)
	}

	// Fork the restored sandbox (100 MiB) 8 ways.
	before := allocated(filepath.Join(d.cfg.StateDir, cowImage))
	fork, err := d.Snapshot(context.Background(), "restored", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var children []model.Endpoint
	for i := range 8 {
		children = append(children, createFrom(t, d, fmt.Sprintf("child%d", i), fork.Key))
	}
	if err := d.DeleteSnapshot(context.Background(), fork.Key); err != nil {
		t.Fatal(err)
	}
	if res := run(t, children[0], "echo mine > /workspace/small"); res.ExitCode != 0 {
		t.Fatal(res)
	}
	for i, c := range children {
		want := "one\n"
		if i == 0 {
			want = "mine\n"
		}
		check, have := "stat -c %s /workspace/big", "104857600"
		if i == len(children)-1 { // one read in full is enough
			check, have = "sha256sum /workspace/big", bigSum
		}
		res := run(t, c, "cat /workspace/small && "+check)
		if !strings.HasPrefix(res.Stdout, want) || !strings.Contains(res.Stdout, have) {
			t.Errorf("child %d: %q, want %q and the big file", i, res.Stdout, want)
		}
	}
	if res := run(t, restored, "cat /workspace/small"); res.Stdout != "one\n" {
		t.Errorf("the parent sees %q after a child's write", res.Stdout)
	}
	grew := allocated(filepath.Join(d.cfg.StateDir, cowImage)) - before
	t.Logf("8 forks of a 100 MiB workspace grew the clone pool by %d KiB", grew>>10)
	if grew >= 2*100<<20 {
		t.Errorf("8 forks grew the host's disk by %d MiB, want under 200 MiB", grew>>20)
	}
}

// createFrom creates sandbox id from snapshot key.
func createFrom(t *testing.T, d *Driver, id, key string) model.Endpoint {
	t.Helper()
	ep, err := d.Create(context.Background(), model.Spec{ID: id, FromSnapshot: key})
	if err != nil {
		t.Fatalf("create %s from %s: %v", id, key, err)
	}
	return ep
}

// TestSnapshotClaimsBeforeStoring: the driver calls the claim with the
// key before any data is under it (the control plane records the key
// there, so that no server's delete of the last other snapshot holding
// it drops the data meanwhile), and a refused claim fails the snapshot
// leaving no file of its own: neither the key's nor a part file.
func TestSnapshotClaimsBeforeStoring(t *testing.T) {
	d := newCloneDriver(t)
	create(t, d, "claims")
	var claimed string
	ref, err := d.Snapshot(context.Background(), "claims", false, func(key string) error {
		claimed = key
		if exists(d.snapshotPath(key)) {
			t.Errorf("snapshot %s was stored before its claim", key)
		}
		return nil
	})
	if err != nil || ref.Key != claimed || !exists(d.snapshotPath(ref.Key)) {
		t.Fatalf("Snapshot = %+v, %v; claimed %q", ref, err, claimed)
	}
	if err := d.DeleteSnapshot(context.Background(), ref.Key); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("a drop of the key is under way")
	_, err = d.Snapshot(context.Background(), "claims", false, func(key string) error {
		claimed = key
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("Snapshot with its claim refused: %v", err)
	}
	if exists(d.snapshotPath(claimed)) {
		t.Errorf("a snapshot whose claim was refused stored %s", claimed)
	}
	if parts, _ := filepath.Glob(filepath.Join(d.snapshotsDir(), ".part-*")); len(parts) != 0 {
		t.Errorf("a snapshot whose claim was refused left %v", parts)
	}
}
