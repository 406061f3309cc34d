//go:build linux

package loopdisk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// hostFS mounts a small XFS of size bytes, a sparse image in a test
// directory, to stand for the host filesystem of a state directory: the
// clone pool is sized from it and grown when it grows. It returns the
// mount point. XFS rather than the usual ext4 because the tests grow it
// online, which ext4 allows only with CAP_SYS_RESOURCE.
func hostFS(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "host.img"), filepath.Join(dir, "host")
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(size)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(MkfsXFSPath(), "-q", "-f", "-K", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v: %s", err, out)
	}
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := Unmount(mnt); err != nil {
			t.Error(err)
		}
	})
	return mnt
}

// growHostFS grows the XFS mounted at mnt (by hostFS) to size bytes,
// online, as an operator growing a host's disk does.
func growHostFS(t testing.TB, mnt string, size int64) {
	t.Helper()
	if err := os.Truncate(filepath.Join(filepath.Dir(mnt), "host.img"), size); err != nil {
		t.Fatal(err)
	}
	if _, err := SetLoopCapacity(mnt); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(MkfsXFSPath()), "xfs_growfs"), mnt).CombinedOutput(); err != nil {
		t.Fatalf("xfs_growfs %s: %v: %s", mnt, err, out)
	}
}

func fsTotal(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize
}

// TestGrowClonePool: a clone pool made on a 1.5 GiB host filesystem is
// that size; once the host is grown to 3 GiB, GrowClonePool grows the
// mounted pool to the host's new size, online, keeping what it held, and
// a file larger than the old pool then fits. A second call, the host
// unchanged, leaves it alone. Before it, a pool never grew: the file did
// not fit (ENOSPC) however much the host had.
func TestGrowClonePool(t *testing.T) {
	requireClonePool(t)
	host := hostFS(t, 1536<<20)
	img, mnt := filepath.Join(host, "cow.img"), filepath.Join(host, "cow")
	if err := MountClonePool(img, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Unmount(mnt); err != nil {
			t.Error(err)
		}
	})
	size, err := ClonePoolSize(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if want := fsTotal(t, host); size < want-ClonePoolGrowStep || size > want {
		t.Fatalf("new pool: %d bytes, want the host's %d", size, want)
	}
	kept := []byte("kept across the grow\n")
	if err := os.WriteFile(filepath.Join(mnt, "kept"), kept, 0o600); err != nil {
		t.Fatal(err)
	}

	if before, after, err := GrowClonePool(img, mnt); err != nil || after != before {
		t.Fatalf("grow with the host unchanged: %d -> %d, %v; want no change", before, after, err)
	}
	growHostFS(t, host, 3<<30)
	want := fsTotal(t, host)
	before, after, err := GrowClonePool(img, mnt)
	if err != nil {
		t.Fatal(err)
	}
	if before != size || after < want-4096 || after > want {
		t.Fatalf("grow: %d -> %d bytes, want %d -> the host's %d", before, after, size, want)
	}
	if got, err := ClonePoolSize(mnt); err != nil || got != after {
		t.Fatalf("pool size after the grow: %d, %v; want %d", got, err, after)
	}
	if before, again, err := GrowClonePool(img, mnt); err != nil || again != before || again != after {
		t.Fatalf("second grow: %d -> %d, %v; want %d unchanged", before, again, err, after)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "kept")); err != nil || !bytes.Equal(got, kept) {
		t.Fatalf("file in the pool after the grow: %q, %v", got, err)
	}
	// More than the old pool held: only the grown one has room for it.
	big := filepath.Join(mnt, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size+(256<<20)); err != nil {
		t.Fatalf("allocate %d bytes in the grown pool: %v", size+(256<<20), err)
	}
}

// BenchmarkGrowClonePool is one grow of a mounted pool after its host
// grew by 256 MiB: what a grown host costs, once, in the background or at
// start (the host's own grow is not timed).
func BenchmarkGrowClonePool(b *testing.B) {
	requireClonePool(b)
	size := int64(1536 << 20)
	host := hostFS(b, size)
	img, mnt := filepath.Join(host, "cow.img"), filepath.Join(host, "cow")
	if err := MountClonePool(img, mnt); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = Unmount(mnt) })
	for b.Loop() {
		b.StopTimer()
		size += 256 << 20
		growHostFS(b, host, size)
		b.StartTimer()
		if before, after, err := GrowClonePool(img, mnt); err != nil || after <= before {
			b.Fatalf("grow: %d -> %d, %v", before, after, err)
		}
	}
}
