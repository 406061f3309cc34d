//go:build linux

package images

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// TestDuSizeDeep: files in directories nested deeper than PATH_MAX below
// the upper dir count too (by path, the walk did not reach them and a
// build could write past its limit there), and no descriptor of the walk
// stays open.
func TestDuSizeDeep(t *testing.T) {
	upper := t.TempDir()
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	want := int64(0)
	for depth := range 40 { // 8 KiB of path
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		if depth%10 == 9 { // a sibling tree, so bases are shared
			if err := unix.Mkdirat(fd, "side", 0o755); err != nil {
				t.Fatal(err)
			}
			want += writeAt(t, fd, "side/f", 7)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	want += writeAt(t, fd, "bottom", 1000)
	unix.Close(fd)
	if got := duSize(upper); got != want {
		t.Errorf("duSize of a tree deeper than PATH_MAX = %d, want %d", got, want)
	}
	if open := openBelow(t, upper); len(open) > 0 {
		t.Errorf("descriptors left open below the upper dir: %q", open)
	}
}

// writeAt writes n bytes to a new file rel beneath dirfd and returns n.
func writeAt(t *testing.T, dirfd int, rel string, n int) int64 {
	t.Helper()
	f, err := unix.Openat(dirfd, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	return int64(n)
}

// openBelow lists this process's open descriptors of files below dir.
func openBelow(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") {
			open = append(open, e.Name())
		}
	}
	return open
}
