package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCleanupNamesForeignMountNamespace: a process that made its own
// mount namespace while a volume was mounted keeps the volume's
// filesystem, and so its loop device, after the driver unmounts it.
// Cleanup cannot undo that from its own namespace; it says which process
// holds it and gives the command that lets go, which works. Mounted
// again before that, the volume is mounted from the same loop device.
func TestVolumeHeldByAnotherMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 || mkfsPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("loop devices need root and mkfs.ext4, as CI has")
		}
		t.Skip("loop devices need root and mkfs.ext4")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatal("nsenter not found: install util-linux")
	}
	t.Parallel()
	dir := t.TempDir()
	const id = "0a1b2c3d-0000-4000-8000-000000000001"
	vol := filepath.Join(dir, "volumes", id)
	if err := os.MkdirAll(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	im := &images{dir: filepath.Join(dir, "images")}
	if err := im.create(filepath.Join(vol, volumeImage), 16<<20); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(vol, volumeMount)
	if err := mountDisk(filepath.Join(vol, volumeImage), mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmountDisk(mnt) })
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
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Kind != "loop_device" {
		t.Fatalf("leftovers %+v, want the volume's loop device", left)
	}
	wantWhat := fmt.Sprintf("its filesystem is still mounted at %s in the mount namespace of pid %d (sleep)", mnt, holder.Process.Pid)
	wantRemove := fmt.Sprintf("nsenter -t %d -m umount -l %s", holder.Process.Pid, mnt)
	if !strings.HasSuffix(left[0].What, wantWhat) || left[0].Remove != wantRemove {
		t.Errorf("leftover %+v, want what ending %q and remove %q", left[0], wantWhat, wantRemove)
	}

	// Mounted again meanwhile (the next `boxkite up`), the volume is the
	// same filesystem, from the same loop device: a second device would
	// be a second ext4 writing the same image.
	loops := loopsBackedUnder(dir)
	if err := mountDisk(filepath.Join(vol, volumeImage), mnt); err != nil {
		t.Fatal(err)
	}
	if again := loopsBackedUnder(dir); len(again) != 1 || again[0] != loops[0] {
		t.Errorf("loop devices after mounting again: %+v, want only %+v", again, loops)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "kept")); err != nil || string(b) != "before" {
		t.Errorf("the file written before reads %q, %v", b, err)
	}
	if err := unmountDisk(mnt); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("sh", "-c", left[0].Remove).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", left[0].Remove, err, out)
	}
	// The loop device detaches itself once its filesystem is gone.
	for deadline := time.Now().Add(10 * time.Second); len(loopsBackedUnder(dir)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still attached: %+v", left[0].Remove, loopsBackedUnder(dir))
		}
	}
}
