//go:build linux

package loopdisk

import (
	"os"
	"path/filepath"
	"testing"
)

func requireMkfs(tb testing.TB) {
	tb.Helper()
	if MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("mkfs.ext4 not found: CI installs e2fsprogs")
		}
		tb.Skip("mkfs.ext4 not found (install e2fsprogs)")
	}
}

// TestTemplateReplaced: a template's block size is read once per file.
// A file put in its place (here one of 1 KiB blocks, as mkfs.ext4 made
// templates below 512 MiB before templateBlockSize) is read afresh and the
// template made again, and so is a template removed; the one checked
// stays in use as long as it is there.
func TestTemplateReplaced(t *testing.T) {
	requireMkfs(t)
	im := NewImages(t.TempDir(), nil)
	path, err := im.template(16<<20, Layout{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := statID(path)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := im.template(16<<20, Layout{}); err != nil || again != path {
		t.Fatalf("template again = %q, %v; want %q", again, err, path)
	}
	if id, _ := statID(path); id != first {
		t.Fatal("the checked template was made again")
	}

	// A zeroed superblock reads as s_log_block_size 0: 1 KiB blocks.
	stale := filepath.Join(t.TempDir(), "stale.img")
	if err := os.WriteFile(stale, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if blockSize(stale) != 1024 {
		t.Fatalf("the stale image's block size is %d, want 1024", blockSize(stale))
	}
	if err := os.Rename(stale, path); err != nil {
		t.Fatal(err)
	}
	if _, err := im.template(16<<20, Layout{}); err != nil {
		t.Fatal(err)
	}
	if bs := blockSize(path); bs != templateBlockSize {
		t.Errorf("a template replaced by one of 1 KiB blocks was kept: block size %d, want %d", bs, templateBlockSize)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := im.template(16<<20, Layout{}); err != nil {
		t.Fatal(err)
	}
	if bs := blockSize(path); bs != templateBlockSize {
		t.Errorf("a removed template was not made again: block size %d", bs)
	}
}

// BenchmarkTemplate is a Create's look-up of its template once the
// template exists: what every sandbox create pays under the images lock.
func BenchmarkTemplate(b *testing.B) {
	requireMkfs(b)
	im := NewImages(b.TempDir(), nil)
	layout := Layout{Dirs: []string{"workspace", "outputs"}, UID: os.Getuid(), GID: os.Getgid()}
	if _, err := im.template(16<<20, layout); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := im.template(16<<20, layout); err != nil {
			b.Fatal(err)
		}
	}
}
