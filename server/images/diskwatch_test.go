package images

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDuSizeSwappedForSymlink: a directory of the build's upper dir that
// the build swaps for a symlink while it is measured (here between its
// parent's listing and its own opening, the walk's hook) is not followed
// out of the upper dir: its target's bytes (the host's files, for a link
// to /) are not counted, the upper dir's own are.
func TestDuSizeSwappedForSymlink(t *testing.T) {
	upper, outside := t.TempDir(), t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(upper, "kept"), 100)
	write(filepath.Join(upper, "sub", "deeper", "kept"), 20)
	write(filepath.Join(upper, "swapped", "small"), 3)
	write(filepath.Join(outside, "host-file"), 1<<20)
	if n := duSize(upper); n != 123 {
		t.Fatalf("duSize before the swap = %d, want 123", n)
	}
	swaps := 0
	n := duWalk(upper, func(rel string) {
		if rel != "swapped" {
			return
		}
		swaps++
		dir := filepath.Join(upper, rel)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, dir); err != nil {
			t.Fatal(err)
		}
	})
	if swaps != 1 {
		t.Fatalf("the walk came to the directory to swap %d times, want 1", swaps)
	}
	if n != 120 {
		t.Errorf("duSize with a directory swapped for a symlink = %d, want 120 (the upper dir's files, not the link's target)", n)
	}
}

// BenchmarkDuSize measures a tree of 100 directories of 20 small files,
// what a build's watch reads every diskCheckEvery.
func BenchmarkDuSize(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		sub := filepath.Join(dir, "d", strconv.Itoa(i%10), strconv.Itoa(i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 20 {
			if err := os.WriteFile(filepath.Join(sub, strconv.Itoa(j)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		if duSize(dir) != 2000 {
			b.Fatal("wrong size")
		}
	}
}
