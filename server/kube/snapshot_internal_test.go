package kube

import (
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
