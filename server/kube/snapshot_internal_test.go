package kube

import (
	"net/http"
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
