package kube

import (
	"net/http"
	"os"
	"path/filepath"
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
