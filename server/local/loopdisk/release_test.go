//go:build linux

package loopdisk

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMountWaitsForPreviousPool: after a server's shutdown the clone
// pool's filesystem lives on, lazily unmounted, while anything inside it
// is still open (a sandbox disk's loop device, here a plain file). The
// next mount waits for it to go instead of failing on XFS's duplicate
// UUID (which made the next server copy disks outside the pool and miss
// the pool's snapshots), and gives up with errImageBound after its wait.
func TestMountWaitsForPreviousPool(t *testing.T) {
	requireClonePool(t)
	dir := t.TempDir()
	img, pool := filepath.Join(dir, "cow.img"), filepath.Join(dir, "cow")
	if err := MountClonePool(img, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unmount(pool) })
	kept := filepath.Join(pool, "snapshots", "kept")
	if err := os.MkdirAll(filepath.Dir(kept), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, []byte("snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(kept)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := Unmount(pool); err != nil {
		t.Fatal(err)
	}
	if dev, err := imageBound(img); err != nil || dev == "" {
		t.Fatalf("imageBound with the lazily unmounted pool still open = %q, %v; want its loop device", dev, err)
	}

	if err := mountClonePool(img, pool, 200*time.Millisecond); !errors.Is(err, errImageBound) {
		t.Fatalf("mount while the previous pool is held = %v, want errImageBound", err)
	}
	if ok, _ := IsMountPoint(pool); ok {
		t.Fatal("the pool is mounted twice")
	}

	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Close()
	}()
	if err := mountClonePool(img, pool, 10*time.Second); err != nil {
		t.Fatalf("mount once the previous pool lets go: %v", err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "snapshot" {
		t.Errorf("the pool's file after the remount = %q, %v", b, err)
	}
	if dev, err := imageBound(img); err != nil || dev == "" {
		t.Errorf("imageBound of the mounted pool = %q, %v; want its loop device", dev, err)
	}
}
