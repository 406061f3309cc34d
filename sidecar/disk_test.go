//go:build linux

package sidecar

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size (mount's syntax, e.g. 64k) at a new
// directory and returns it.
func mountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0755"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// mountOnFullHost mounts an ext4 filesystem of 256 MiB whose image lives
// on a host filesystem (a tmpfs) of hostSize: the inner filesystem accepts
// writes the host cannot store, as a sparse sandbox disk on a nearly full
// host does, and the loss shows up as EIO when the data is written back.
func mountOnFullHost(t testing.TB, hostSize string) string {
	t.Helper()
	return mountExt4(t, mountTmpfs(t, hostSize))
}

// mountExt4 mounts a sparse 256 MiB ext4 image kept in the directory host
// through a loop device, as the local driver does a sandbox's disk, and
// returns the mount point.
func mountExt4(t testing.TB, host string) string {
	t.Helper()
	dir, _ := mountExt4With(t, host, "errors=continue")
	return dir
}

// mountExt4With is mountExt4 with the mount options opts; it also returns
// the loop device (/dev/loopN).
func mountExt4With(t testing.TB, host, opts string) (dir, dev string) {
	t.Helper()
	for _, tool := range []string{"mkfs.ext4", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (e2fsprogs, util-linux): %v", tool, err)
		}
	}
	img := filepath.Join(host, "disk.img")
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(256<<20), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", img, err, out)
	}
	dev = attachLoop(t, img)
	dir = t.TempDir()
	if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		t.Fatalf("mount %s: %v", dev, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir, dev
}

// attachLoop attaches the image img to a free loop device until t ends
// and returns the device (/dev/loopN).
func attachLoop(t testing.TB, img string) string {
	t.Helper()
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup --find --show %s: %v\n%s", img, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev
}
