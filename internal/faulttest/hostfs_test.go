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
	t.Cleanup(func() {
		// Loop devices of filesystems unmounted just before detach in
		// the background (the kernel's autoclear): retry a while.
		var out []byte
		var err error
		for range 100 {
			if out, err = exec.Command("umount", mnt).CombinedOutput(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			who, foreign := holders(mnt)
			if foreign {
				// Another process on this machine (a concurrent test's
				// private mount namespace) copied our mounts and pins
				// them: not ours to undo.
				t.Logf("umount %s: busy, held by a mount namespace outside this test:\n%s", mnt, who)
			} else {
				t.Errorf("umount %s: %v\n%s%s", mnt, err, out, who)
			}
			_ = exec.Command("umount", "-l", mnt).Run()
		}
		os.Remove(mnt)
	})
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

// holders says what keeps the filesystem at mnt busy: loop devices backed
// by its files, the mount namespaces that still mount them, and processes
// with a file or directory on them. foreign reports whether a mount
// namespace other than this process's holds one.
func holders(mnt string) (who string, foreign bool) {
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		return "", false
	}
	var b strings.Builder
	held := map[uint64]bool{st.Dev: true}
	devs, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range devs {
		if backing, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(backing), mnt+"/") {
			dev, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(f)), "dev"))
			fmt.Fprintf(&b, "loop device %s (%s) backed by %s", filepath.Base(filepath.Dir(filepath.Dir(f))), strings.TrimSpace(string(dev)), backing)
			var major, minor uint32
			if _, err := fmt.Sscanf(string(dev), "%d:%d", &major, &minor); err == nil {
				held[unix.Mkdev(major, minor)] = true
			}
		}
	}
	self, _ := os.Readlink("/proc/self/ns/mnt")
	mounts, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, m := range mounts {
		ns, _ := os.Readlink(filepath.Join(filepath.Dir(m), "ns", "mnt"))
		info, _ := os.ReadFile(m)
		for _, line := range strings.Split(string(info), "\n") {
			f := strings.Fields(line)
			var major, minor uint32
			if len(f) < 5 {
				continue
			}
			if _, err := fmt.Sscanf(f[2], "%d:%d", &major, &minor); err != nil || !held[unix.Mkdev(major, minor)] || unix.Mkdev(major, minor) == st.Dev {
				continue
			}
			if ns != self {
				foreign = true
			}
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(m), "cmdline"))
			fmt.Fprintf(&b, "%s (%s) mounts %s\n", filepath.Dir(m), strings.ReplaceAll(string(cmd), "\x00", " "), f[4])
			break
		}
	}
	links, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	more, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, l := range append(links, more...) {
		var ls unix.Stat_t
		if unix.Stat(l, &ls) == nil && held[ls.Dev] {
			target, _ := os.Readlink(l)
			pid := strings.Split(l, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			fmt.Fprintf(&b, "pid %s (%s) holds %s\n", pid, strings.ReplaceAll(string(cmd), "\x00", " "), target)
		}
	}
	return b.String(), foreign
}
