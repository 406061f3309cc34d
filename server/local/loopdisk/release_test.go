//go:build linux

package loopdisk

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMountReusesPreviousPool: after a server's shutdown the clone pool's
// filesystem lives on, lazily unmounted, while anything inside it is
// still open (a sandbox disk's loop device, a mount namespace a jail
// copied; here a plain file). The next mount takes it back from its loop
// device at once, the same filesystem (a write through the old file is
// read through the new mount), where it used to wait 10 s for it to go
// and then leave the next server without its pool, its sandboxes and
// snapshots out of reach (issue 19). The device detaches once both let go.
func TestMountReusesPreviousPool(t *testing.T) {
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
	held, err := os.OpenFile(kept, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := Unmount(pool); err != nil {
		t.Fatal(err)
	}
	dev, err := imageBound(img)
	if err != nil || dev == "" {
		t.Fatalf("imageBound with the lazily unmounted pool still open = %q, %v; want its loop device", dev, err)
	}

	start := time.Now()
	if err := MountClonePool(img, pool); err != nil {
		t.Fatalf("mount while the previous pool is held: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the mount took %s: it waited for the previous pool", took)
	}
	if again, err := imageBound(img); err != nil || again != dev {
		t.Errorf("the pool's loop device after the remount = %q, %v; want %q, the same one", again, err, dev)
	}
	if _, err := held.WriteString(" and more"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "snapshot and more" {
		t.Errorf("the pool's file after the remount = %q, %v; want the write through the old mount's file", b, err)
	}

	held.Close()
	if err := Unmount(pool); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		dev, err := imageBound(img)
		if err == nil && dev == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool's loop device once nothing holds it = %q, %v; want it detached", dev, err)
		}
	}
}

// imageBound returns the loop device img is attached to, or "".
func imageBound(img string) (string, error) {
	f, err := os.Open(img)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", img, err)
	}
	defer f.Close()
	dev, err := attachedLoop(f)
	if err != nil || dev == nil {
		return "", err
	}
	defer dev.Close()
	return dev.Name(), nil
}
