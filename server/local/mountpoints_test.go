//go:build linux

package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClearMountPoints: a restored disk loses the empty mount points of
// its snapshot's volumes and the empty parents its jail made for them;
// a directory holding anything, one of another owner, and anything a
// link leads to outside the workspace stay.
func TestClearMountPoints(t *testing.T) {
	top := t.TempDir()
	ws, outside := filepath.Join(top, "workspace"), filepath.Join(top, "outside")
	for _, d := range []string{"shared", "nest/ed", "full", "mine", "keep"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(outside, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "full", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	if root { // another owner's (the sandbox user's) stays
		if err := os.Chown(filepath.Join(ws, "mine"), 1001, 1001); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		"/workspace/shared", "/workspace/nest/ed", "/workspace/full", "/workspace/mine",
		"/workspace/link/empty", "/workspace/../outside/empty", "/etc", "/workspace", "relative/keep",
	}
	if err := clearDirsOf(ws, paths, uint32(os.Geteuid())); err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{"workspace/shared": true, "workspace/nest": true, "workspace/mine": !root}
	for _, p := range []string{"workspace/shared", "workspace/nest", "workspace/full", "workspace/mine", "workspace/keep", "outside/empty"} {
		_, err := os.Lstat(filepath.Join(top, p))
		if exists := err == nil; exists == gone[p] {
			t.Errorf("%s: exists %v, want %v", p, exists, !gone[p])
		}
	}
}
