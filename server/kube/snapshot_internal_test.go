package kube

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzSnapshotPath: a key is a path only when it is one the driver makes,
// and then a file directly in the snapshot directory.
func FuzzSnapshotPath(f *testing.F) {
	for _, k := range []string{"sha256-" + strings.Repeat("a", 64), "fork-" + strings.Repeat("0", 64), "../x", "sha256-../../etc", "", "sha256-" + strings.Repeat("a", 63) + "/"} {
		f.Add(k)
	}
	d := &Driver{cfg: Config{SnapshotDir: "/snapshots"}}
	f.Fuzz(func(t *testing.T, key string) {
		p, err := d.snapshotPath(key)
		if err != nil {
			return
		}
		if filepath.Dir(p) != "/snapshots" || filepath.Base(p) != key+".tar" {
			t.Errorf("key %q gave path %q", key, p)
		}
	})
}

func TestSnapshotPath(t *testing.T) {
	d := &Driver{cfg: Config{SnapshotDir: "/s"}}
	for key, ok := range map[string]bool{
		"sha256-" + strings.Repeat("ab", 32): true, "fork-" + strings.Repeat("0", 64): true,
		"sha256-" + strings.Repeat("A", 64): false, "../sha256-" + strings.Repeat("a", 64): false, "": false,
	} {
		if _, err := d.snapshotPath(key); (err == nil) != ok {
			t.Errorf("snapshotPath(%q): %v, want ok %v", key, err, ok)
		}
	}
	if _, err := (&Driver{}).snapshotPath("sha256-" + strings.Repeat("a", 64)); err == nil {
		t.Error("no snapshot directory: want an error")
	}
}

// TestArchiveQuery: the copy out of a pod's workspace (snapshot, pause)
// keeps to the workspace's own filesystem, so a volume mounted below it
// is not copied, nor written back over at a resume; the copy in names
// the workspace only.
func TestArchiveQuery(t *testing.T) {
	if got := archiveQuery(http.MethodGet).Encode(); got != "one_file_system=true&path=%2Fworkspace" {
		t.Errorf("GET query %q", got)
	}
	if got := archiveQuery(http.MethodPost).Encode(); got != "path=%2Fworkspace" {
		t.Errorf("POST query %q", got)
	}
}

// TestSnapshotKeys: the keys the snapshot directory lists for the control
// plane's sweep of leftovers (model.SnapshotLister) are its snapshots'
// tars only: not the fork- copies (a fork's, a paused sandbox's, which no
// snapshot row names), not the partial- copies under way, not anything
// else; none without a directory, or before the first snapshot made it.
func TestSnapshotKeys(t *testing.T) {
	if keys, err := (&Driver{}).SnapshotKeys(t.Context()); err != nil || keys != nil {
		t.Fatalf("SnapshotKeys without a snapshot directory = %v, %v; want none", keys, err)
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	d := &Driver{cfg: Config{SnapshotDir: dir}}
	if keys, err := d.SnapshotKeys(t.Context()); err != nil || keys != nil {
		t.Fatalf("SnapshotKeys before the directory exists = %v, %v; want none", keys, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	snap := "sha256-" + strings.Repeat("ab", 32)
	for _, name := range []string{
		snap + ".tar", "fork-" + strings.Repeat("0", 64) + ".tar", "partial-123", "sha256-short.tar", snap + ".img", "notes",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := d.SnapshotKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != snap {
		t.Errorf("SnapshotKeys = %v, want [%s]", keys, snap)
	}
}

// TestUnheldPartialSnapshots: of the partial- copies in the snapshot
// directory, the sweep (model.PartialSnapshotLister) is offered only
// those no copy holds (a dead replica's: its lock went with its
// process), and deleting one a copy holds does nothing; a copy's file is
// held until it is renamed into place or removed, and a released one
// that was not renamed is gone.
func TestUnheldPartialSnapshots(t *testing.T) {
	dir := t.TempDir()
	d := &Driver{cfg: Config{SnapshotDir: dir}}
	live, err := createPartial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.release()
	renamed, err := createPartial(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "sha256-"+strings.Repeat("cd", 32)+".tar")
	if err := renamed.rename(snap); err != nil {
		t.Fatal(err)
	}
	failed, err := createPartial(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"partial-dead", "notes"} { // a dead replica's copy: no lock
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	unheld, err := d.UnheldPartialSnapshots(t.Context())
	if err != nil || len(unheld) != 1 || unheld[0] != "partial-dead" {
		t.Fatalf("UnheldPartialSnapshots = %v, %v; want [partial-dead]", unheld, err)
	}
	for _, p := range []*partial{live, failed} {
		if err := d.DeletePartialSnapshot(t.Context(), filepath.Base(p.Name())); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p.Name()); err != nil {
			t.Errorf("a held copy was deleted: %v", err)
		}
	}
	if err := d.DeletePartialSnapshot(t.Context(), "partial-dead"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x", "notes", "sha256-x.tar"} {
		if err := d.DeletePartialSnapshot(t.Context(), name); err == nil {
			t.Errorf("DeletePartialSnapshot(%q) = nil, want it refused", name)
		}
	}
	renamed.release()
	failed.release()
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"notes", filepath.Base(live.Name()), filepath.Base(snap)}; !slices.Equal(left, want) {
		t.Errorf("the directory holds %v, want %v (the live copy, the renamed one, the rest)", left, want)
	}
	if _, err := os.Stat(snap); err != nil {
		t.Errorf("the renamed copy: %v", err)
	}
}
