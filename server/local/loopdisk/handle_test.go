//go:build linux

package loopdisk

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPoolImageKeepsItsTimes mounts a disk made on the XFS clone pool and
// writes and syncs a file in it: the loop device writes the image (in
// direct I/O, as before) but leaves its mtime and ctime as they were, so a
// flush of the device is not an XFS log force for the timestamps (issue
// 27). Opened by name, the image's times move with the first write.
func TestPoolImageKeepsItsTimes(t *testing.T) {
	requireClonePool(t)
	dir := t.TempDir()
	pool := filepath.Join(dir, "cow")
	if err := MountClonePool(filepath.Join(dir, "cow.img"), pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Unmount(pool); err != nil {
			t.Error(err)
		}
	})
	img, mnt := filepath.Join(pool, "disk.img"), filepath.Join(pool, "disk")
	if err := NewImages(filepath.Join(pool, "images"), nil).Create(img, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := MountNew(img, mnt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Unmount(mnt); err != nil {
			t.Error(err)
		}
	})
	dev := LoopDevice(mnt)
	if dev == 0 {
		t.Fatal("the disk is not mounted")
	}
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(dev), unix.Minor(dev))
	if dio := readSys(t, sys+"/loop/dio"); dio != "1" {
		t.Errorf("the disk's loop device has dio %q, want 1", dio)
	}
	writes := func() int64 {
		n, err := strconv.ParseInt(strings.Fields(readSys(t, sys+"/stat"))[4], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	var before unix.Stat_t
	if err := unix.Stat(img, &before); err != nil { // the stat also asks the next change for a fine-grained time
		t.Fatal(err)
	}
	w0 := writes()
	time.Sleep(20 * time.Millisecond) // a coarse clock ticks meanwhile
	if err := os.WriteFile(filepath.Join(mnt, "f"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Syncfs(fd)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	if w := writes(); w <= w0 {
		t.Fatalf("the loop device wrote nothing (%d writes before the sync, %d after)", w0, w)
	}
	var after unix.Stat_t
	if err := unix.Stat(img, &after); err != nil {
		t.Fatal(err)
	}
	if after.Mtim != before.Mtim || after.Ctim != before.Ctim {
		t.Errorf("the image's times moved with the loop device's writes: mtime %v → %v, ctime %v → %v",
			time.Unix(before.Mtim.Unix()), time.Unix(after.Mtim.Unix()), time.Unix(before.Ctim.Unix()), time.Unix(after.Ctim.Unix()))
	}
}

// TestOpenImageByName: an image that is not on XFS is opened by name,
// read-write.
func TestOpenImageByName(t *testing.T) {
	p := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.XFS_SUPER_MAGIC {
		t.Skip("the temp directory is on XFS")
	}
	f, err := openImage(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Name() != p {
		t.Errorf("name %q, want %q", f.Name(), p)
	}
	if _, err := f.WriteAt([]byte("y"), 0); err != nil {
		t.Errorf("not writable: %v", err)
	}
	if _, err := openImage(filepath.Join(t.TempDir(), "missing.img")); err == nil {
		t.Error("a missing image opened")
	}
}

func readSys(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
