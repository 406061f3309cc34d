//go:build linux

package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSnapshotKeys: the keys the snapshot store lists for the control
// plane's sweep of leftovers (model.SnapshotLister) are its snapshots'
// images only: not a fork's transient image, not a copy under way, not
// anything else in the directory; none without a directory.
func TestSnapshotKeys(t *testing.T) {
	d := &Driver{data: t.TempDir()}
	if keys, err := d.SnapshotKeys(t.Context()); err != nil || keys != nil {
		t.Fatalf("SnapshotKeys without a store = %v, %v; want none", keys, err)
	}
	if err := os.MkdirAll(d.snapshotsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	snap := "sha256-" + strings.Repeat("ab", 32)
	for _, name := range []string{
		snap + ".img", "tmp-" + strings.Repeat("0", 32) + ".img", ".part-" + strings.Repeat("1", 32) + ".img",
		"sha256-short.img", snap + ".tar", "notes",
	} {
		if err := os.WriteFile(filepath.Join(d.snapshotsDir(), name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(d.snapshotsDir(), "sha256-"+strings.Repeat("cd", 32)+".img"), 0o700); err != nil {
		t.Fatal(err)
	}
	keys, err := d.SnapshotKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{snap}, keys); diff != "" {
		t.Errorf("SnapshotKeys (-want +got):\n%s", diff)
	}
}
