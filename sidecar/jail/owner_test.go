package jail

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testBase is a host id range past the local driver's default layout, so
// these tests never map ids a sandbox of a parallel test run has.
const testBase = 0x7fd00000

// TestStartOwned: a process started as a jail's init is, with a host id
// range, lands in a user namespace owned by the range's base uid (not
// root) that maps the whole range, runs as root inside, and no thread of
// this process keeps the owner's ids afterwards.
func TestStartOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mapping a host id range needs root")
	}
	spec := Spec{HostIDBase: testBase}
	out, pid, finish := startOwnedCmd(t, spec, 0, "/bin/sh", "-c", "read x; cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g")
	owner, err := nsOwner(pid)
	if werr := finish(); werr != nil {
		t.Fatalf("%v: %s", werr, out.String())
	}
	if err != nil || owner != testBase {
		t.Errorf("the user namespace is owned by %d (%v), want %d", owner, err, testBase)
	}
	want := fmt.Sprintf("0 %d 65536\n0 %d 65536\n0\n0\n", testBase, testBase)
	if got := strings.Join(strings.Fields(out.String()), " "); got != strings.Join(strings.Fields(want), " ") {
		t.Errorf("inside: %q, want %q", out.String(), want)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if (strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "Gid:")) && len(strings.Fields(line)) == 5 &&
				strings.Join(strings.Fields(line)[1:], " ") != "0 0 0 0" {
				t.Errorf("thread %s kept other ids: %s", task, line)
			}
		}
	}
}

// TestIdmapData: a detached mount idmapped through a jail's user
// namespace shows a file stored as uid n as the jail's base+n, a mount not
// marked for it is left alone, and a filesystem that cannot be idmapped
// (overlayfs) fails with a message that says so. The filesystems are the
// ones sandbox data lives on: ext4 (the quota disks and volumes,
// loop-mounted), tmpfs.
func TestIdmapData(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("idmapped mounts need root")
	}
	pid := holdNamespace(t)
	tests := []struct {
		name   string
		dir    func(t *testing.T) string
		idmap  bool
		errMsg string
	}{
		{"ext4", ext4Dir, true, ""},
		{"ext4, not marked", ext4Dir, false, ""},
		{"tmpfs", func(t *testing.T) string { return mountDir(t, "tmpfs", "tmpfs", "size=1m") }, true, ""},
		{"overlayfs", overlayDir, true, "does not support idmapped mounts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(filepath.Join(dir, "f"), DefaultUID, DefaultUID); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			m := hostMount{target: WorkspaceDir, file: os.NewFile(uintptr(fd), dir), idmap: tt.idmap}
			defer m.file.Close()
			err = idmapData(pid, []hostMount{m})
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("idmapData = %v, want an error saying %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, "f", &st, 0); err != nil {
				t.Fatal(err)
			}
			want := uint32(DefaultUID)
			if tt.idmap {
				want += testBase
			}
			if st.Uid != want || st.Gid != want {
				t.Errorf("the file shows as %d:%d, want %d:%d", st.Uid, st.Gid, want, want)
			}
		})
	}
}

// ext4Dir loop-mounts a new ext4 image, as the local driver's quota disks
// and volumes are (util-linux mount, e2fsprogs).
func ext4Dir(t *testing.T) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		mkfs = "/usr/sbin/mkfs.ext4" // a PATH without sbin
	}
	if out, err := exec.Command(mkfs, "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -o loop: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// mountDir mounts a filesystem on a new directory until the test ends.
func mountDir(t *testing.T, source, fstype, data string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount(source, dir, fstype, 0, data); err != nil {
		t.Fatalf("mount %s: %v", fstype, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func overlayDir(t *testing.T) string {
	base := t.TempDir()
	for _, d := range []string{"lower", "upper", "work"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return mountDir(t, "overlay", "overlay", "lowerdir="+base+"/lower,upperdir="+base+"/upper,workdir="+base+"/work")
}

// holdNamespace starts a process in a user namespace mapping testBase, as
// a jail's, that lives until the test ends, and returns its pid.
func holdNamespace(t testing.TB) int {
	t.Helper()
	spec := Spec{HostIDBase: testBase}
	cmd := exec.Command("/bin/sleep", "3600")
	cmd.SysProcAttr = sysProcAttr(spec)
	if err := startOwned(cmd, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// nsOwner returns the uid owning pid's user namespace (NS_GET_OWNER_UID).
func nsOwner(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var uid uint32
	const nsGetOwnerUID = 0xb704 // _IO(0xb7, 0x4)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nsGetOwnerUID, uintptr(unsafe.Pointer(&uid))); e != 0 {
		return 0, e
	}
	return int(uid), nil
}

// BenchmarkStartOwned and BenchmarkStartRootOwned start /bin/true as a
// jail's init is started, with and without the owner switch: the
// difference is what a non-root namespace owner costs each create.
func BenchmarkStartOwned(b *testing.B) { benchmarkStart(b, startOwned) }

func BenchmarkStartRootOwned(b *testing.B) {
	benchmarkStart(b, func(c *exec.Cmd, _ Spec) error { return c.Start() })
}

func benchmarkStart(b *testing.B, start func(*exec.Cmd, Spec) error) {
	if os.Geteuid() != 0 {
		b.Skip("mapping a host id range needs root")
	}
	spec := Spec{HostIDBase: testBase}
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = sysProcAttr(spec)
		if err := start(cmd, spec); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdmapData idmaps three detached mounts (a jail's workspace,
// outputs and one volume) per operation; making the mounts is not timed.
func BenchmarkIdmapData(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("idmapped mounts need root")
	}
	pid := holdNamespace(b)
	dir := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		var mounts []hostMount
		for range 3 {
			fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				b.Fatal(err)
			}
			mounts = append(mounts, hostMount{file: os.NewFile(uintptr(fd), dir), idmap: true})
		}
		b.StartTimer()
		if err := idmapData(pid, mounts); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, m := range mounts {
			m.file.Close()
		}
		b.StartTimer()
	}
}

// BenchmarkOwnerSwitch is the owner switch alone, without the clone:
// becoming the range's base uid and back on a locked thread, in a new
// goroutine as startOwned does.
func BenchmarkOwnerSwitch(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("switching to another uid needs root")
	}
	for b.Loop() {
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			err := setThreadIDs(testBase, testBase)
			if rerr := setThreadIDs(0, 0); rerr == nil {
				runtime.UnlockOSThread()
			}
			errc <- err
		}()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
