//go:build linux

package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/local/loopdisk"
)

// TestVolumeHeldByAnotherMountNamespace: a process that made its own
// mount namespace while a volume was mounted keeps the volume's
// filesystem, and so its loop device, after the driver unmounts it.
// Cleanup does not count that device as left behind (it detaches by
// itself once that process lets go). Mounted again meanwhile (the next
// `boxkite up`), the volume is mounted from that same loop device, not a
// second one: a second device would be a second ext4 instance writing the
// same image, which does not see what the first has not written back.
func TestVolumeHeldByAnotherMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 || loopdisk.MkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("loop devices need root and mkfs.ext4, as CI has")
		}
		t.Skip("loop devices need root and mkfs.ext4")
	}
	t.Parallel()
	dir := t.TempDir()
	const id = "0a1b2c3d-0000-4000-8000-000000000001"
	vol := filepath.Join(dir, "volumes", id)
	if err := os.MkdirAll(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	im := loopdisk.NewImages(filepath.Join(dir, "images"), nil)
	if err := im.Create(filepath.Join(vol, volumeImage), 16<<20); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(vol, volumeMount)
	if err := loopdisk.Mount(filepath.Join(vol, volumeImage), mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = loopdisk.Unmount(mnt) })
	// A process with a private copy of this namespace, volume included
	// (Go makes the new namespace's mounts private, as unshare -m does).
	holder := exec.Command("sleep", "120")
	holder.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if err := os.WriteFile(filepath.Join(mnt, "kept"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}

	left, err := Cleanup(t.Context(), Config{StateDir: dir})
	if err != nil || len(left) != 0 {
		t.Fatalf("Cleanup = %+v, %v; want nothing left", left, err)
	}
	loops := loopsBackedUnder(dir)
	if len(loops) != 1 {
		t.Fatalf("loop devices %+v: the other namespace should hold the volume's", loops)
	}

	if err := loopdisk.Mount(filepath.Join(vol, volumeImage), mnt); err != nil {
		t.Fatal(err)
	}
	if again := loopsBackedUnder(dir); len(again) != 1 || again[0] != loops[0] {
		t.Errorf("loop devices after mounting again: %+v, want only %+v", again, loops)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "kept")); err != nil || string(b) != "before" {
		t.Errorf("the file written before reads %q, %v", b, err)
	}
	if err := loopdisk.Unmount(mnt); err != nil {
		t.Fatal(err)
	}

	// The device detaches itself once the other namespace is gone.
	_ = holder.Process.Kill()
	_ = holder.Wait()
	for deadline := time.Now().Add(30 * time.Second); len(loopsBackedUnder(dir)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("with the other namespace gone, still attached: %+v", loopsBackedUnder(dir))
		}
	}
}
