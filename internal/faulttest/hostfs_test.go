package faulttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// smallFS mounts a fresh ext4 filesystem of sizeMiB on a loop device and
// returns its mount point, a short path (sandbox sockets live under it);
// it is unmounted when the test ends, after everything registered later.
func smallFS(t *testing.T, sizeMiB int) string {
	t.Helper()
	mnt, _ := loopFS(t, sizeMiB, "loop")
	return mnt
}

// loopFS is smallFS with mount options of its own; it also returns the
// image, to check and mount it again.
func loopFS(t *testing.T, sizeMiB int, options string) (mnt, img string) {
	t.Helper()
	img = filepath.Join(t.TempDir(), "host.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(sizeMiB) << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(mkfs(t), "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	mnt, err = os.MkdirTemp("", "bxkf-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", options, img, mnt).CombinedOutput(); err != nil {
		os.Remove(mnt)
		t.Fatalf("mount %s: %v\n%s", img, err, out)
	}
	t.Cleanup(func() { unmountHostFS(t, mnt) })
	if err := os.Chmod(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return mnt, img
}

// mkfs finds mkfs.ext4 (often outside a user's PATH).
func mkfs(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"mkfs.ext4", "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("mkfs.ext4 not found: install e2fsprogs")
	return ""
}

// freeBytes is the space an unprivileged writer has left on dir's filesystem.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// ballast fills dir's filesystem with a file of n bytes (real blocks, not
// a hole), to be removed later to give the space back.
func ballast(t *testing.T, dir string, n int64) string {
	t.Helper()
	p := filepath.Join(dir, "ballast-"+strconv.FormatInt(n, 10))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		t.Fatalf("fallocate ballast: %v", err)
	}
	return p
}

// unmountHostFS unmounts the filesystem at mnt once what was on it let go
// (loop devices of filesystems just unmounted detach in the background,
// the kernel's autoclear), and removes mnt. A filesystem kept busy only
// by processes outside the test (see holdersOf) is left to them,
// detached, and logged; kept busy by the test itself, it fails the test.
func unmountHostFS(t *testing.T, mnt string) {
	defer os.Remove(mnt)
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Errorf("stat %s: %v", mnt, err)
		return
	}
	hostDev := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	var out []byte
	var err error
	var foreign []holder // seen at the first failure: holders come and go
	for i := range 100 {
		if out, err = exec.Command("umount", mnt).CombinedOutput(); err == nil {
			return
		}
		if i == 0 {
			if hs := hostFSHolders(mnt, hostDev); onlyForeign(hs) {
				foreign = hs
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer func() { _ = exec.Command("umount", "-l", mnt).Run() }()
	hs := hostFSHolders(mnt, hostDev)
	var b strings.Builder
	for _, h := range append(foreign, hs...) {
		fmt.Fprintf(&b, "\n  %s", h)
	}
	if onlyForeign(hs) || (len(hs) == 0 && len(foreign) > 0) {
		t.Logf("umount %s: busy, held only by processes outside this test:%s", mnt, b.String())
		return
	}
	t.Errorf("umount %s: %v\n%s%s", mnt, err, out, b.String())
}

// hostFSHolders lists what keeps the host filesystem at mnt (device
// hostDev) busy: the filesystems on loop devices backed by its files, and
// descriptors on it.
func hostFSHolders(mnt, hostDev string) []holder {
	loops := loopDevicesUnder(mnt)
	devs := map[string]bool{hostDev: true}
	for dev := range loops {
		devs[dev] = true
	}
	hs := holdersOf(devs, mnt, nil)
	if len(hs) == 0 && len(loops) > 0 {
		hs = detachedPinners(nil) // held, but not through any mount table
	}
	if len(hs) == 0 && len(loops) > 0 {
		// Nobody to blame: the test's own problem until shown otherwise.
		hs = append(hs, holder{what: fmt.Sprintf("loop devices %v, held by nothing visible", loops), ours: true})
	}
	return hs
}
