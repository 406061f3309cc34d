//go:build linux

package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMakeWritableFollowsNoLink: making a sandbox's tree writable before
// removing it changes the directories in it and nothing a symlink in it
// points at, on the host.
func TestMakeWritableFollowsNoLink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	if err := os.Chmod(base, 0o750); err != nil {
		t.Fatal(err)
	}
	tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	for _, d := range []string{tree + "/a/b", outside + "/dir"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside+"/file", []byte("host"), 0o640); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"a/to-dir": outside + "/dir", "a/to-file": outside + "/file", "up": ".."} {
		if err := os.Symlink(target, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{tree + "/a/b", tree + "/a", tree} { // as an agent would: chmod 0555, deepest first
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(outside+"/dir", 0o555); err != nil {
		t.Fatal(err)
	}
	makeWritable(tree)
	for p, want := range map[string]os.FileMode{
		tree:              0o700,
		tree + "/a":       0o700,
		tree + "/a/b":     0o700,
		outside + "/dir":  0o555,
		outside + "/file": 0o640,
		base:              0o750, // through "up"
	} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", p, got, want)
		}
	}
	if err := os.RemoveAll(tree); err != nil {
		t.Fatalf("remove the tree: %v", err)
	}
	if _, err := os.Stat(outside + "/file"); err != nil {
		t.Errorf("the link's target went with the tree: %v", err)
	}
}

// TestMakeWritableWinsTheSymlinkRace: while a directory of the tree and a
// symlink to a host directory swap places (renameat2 RENAME_EXCHANGE in a
// loop), a path-based walk (the one removeAll used to do) is first shown
// to chmod the host directory (given up to a minute: on a loaded machine
// the racer may take long to interleave); makeWritable never does in the
// budget.
func TestMakeWritableWinsTheSymlinkRace(t *testing.T) {
	t.Parallel()
	const budget, naiveBudget = 3 * time.Second, time.Minute
	base := t.TempDir()
	tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
	for _, d := range []string{tree + "/d", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, tree+"/l"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_ = unix.Renameat2(unix.AT_FDCWD, tree+"/d", unix.AT_FDCWD, tree+"/l", unix.RENAME_EXCHANGE)
		}
	}()
	touched := func() bool {
		fi, err := os.Stat(outside)
		return err == nil && fi.Mode().Perm() != 0o755
	}
	naive := func(dir string) {
		_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
	}
	race := func(walk func(string), budget time.Duration) (bool, int) {
		start, n := time.Now(), 0
		for ; time.Since(start) < budget; n++ {
			walk(tree)
			if touched() {
				return true, n
			}
		}
		return false, n
	}
	if won, n := race(naive, naiveBudget); !won {
		t.Fatalf("the racer did not beat a path-based walk in %v (%d walks); the test would prove nothing", naiveBudget, n)
	} else {
		t.Logf("the path-based walk chmodded the host directory after %d walks", n)
	}
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if lost, n := race(makeWritable, budget); lost {
		t.Errorf("makeWritable chmodded the host directory after %d walks", n)
	} else {
		t.Logf("makeWritable held for %d walks", n)
	}
}
