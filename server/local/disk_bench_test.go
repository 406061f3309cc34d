//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// BenchmarkDiskWrite measures what the sandbox disk's journal costs: the
// same writes, each followed by a syncfs as the server does before it
// acknowledges them, on a loop-mounted image made as the driver makes it
// (with its 16 MiB journal) and on one without a journal, as before.
// Needs root (loop devices).
func BenchmarkDiskWrite(b *testing.B) {
	if os.Geteuid() != 0 || loopdisk.MkfsPath() == "" {
		b.Skip("needs root and mkfs.ext4")
	}
	for _, journal := range []bool{true, false} {
		name := "journal"
		if !journal {
			name = "no-journal"
		}
		b.Run(name, func(b *testing.B) {
			mnt := benchDisk(b, journal)
			b.Run("100 small files", func(b *testing.B) {
				data := make([]byte, 4096)
				for i := 0; b.Loop(); i++ {
					for j := range 100 {
						if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f-%d-%d", i%8, j)), data, 0o644); err != nil {
							b.Fatal(err)
						}
					}
					benchSyncfs(b, mnt)
				}
			})
			b.Run("32 MiB file", func(b *testing.B) {
				data := make([]byte, 32<<20)
				for i := 0; b.Loop(); i++ {
					if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("big-%d", i%4)), data, 0o644); err != nil {
						b.Fatal(err)
					}
					benchSyncfs(b, mnt)
				}
				b.SetBytes(int64(len(data)))
			})
		})
	}
}

// BenchmarkSyncDisk measures what the server adds to an exec, a file
// create or an upload: SyncDisk of the sandbox's disk when nothing was
// written, and after a 4 KiB write.
func BenchmarkSyncDisk(b *testing.B) {
	if os.Geteuid() != 0 || loopdisk.MkfsPath() == "" {
		b.Skip("needs root and mkfs.ext4")
	}
	d := newDriver(b)
	create(b, d, "sync")
	ws := filepath.Join(d.sandboxDir("sync"), diskMount, "workspace")
	ctx := context.Background()
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if err := d.SyncDisk(ctx, "sync"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after a 4 KiB write", func(b *testing.B) {
		data := make([]byte, 4096)
		for b.Loop() {
			if err := os.WriteFile(filepath.Join(ws, "f"), data, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := d.SyncDisk(ctx, "sync"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchDisk mounts a fresh 1 GiB sparse image, with or without a journal,
// and unmounts it when the benchmark ends.
func benchDisk(b *testing.B, journal bool) string {
	b.Helper()
	dir := b.TempDir()
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
	if journal {
		im := loopdisk.NewImages(filepath.Join(dir, "images"), nil)
		if err := im.Create(img, 1<<30); err != nil {
			b.Fatal(err)
		}
	} else {
		f, err := os.Create(img)
		if err == nil {
			err = f.Truncate(1 << 30)
			f.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
		out, err := exec.Command(loopdisk.MkfsPath(), "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "nodiscard,lazy_itable_init=1", img).CombinedOutput()
		if err != nil {
			b.Fatalf("mkfs: %v\n%s", err, out)
		}
	}
	if err := loopdisk.Mount(img, mnt); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = loopdisk.Unmount(mnt) })
	return mnt
}

func benchSyncfs(b *testing.B, mnt string) {
	f, err := os.Open(mnt)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
}
