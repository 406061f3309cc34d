package jail

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The /proc masks of a jail (placeProc) are binds of /dev/null, each a
// detached clone moved into place. A clone closed while still detached
// is dissolved by the kernel (dissolve_on_fput → umount_tree →
// namespace_unlock), and namespace_unlock waits an expedited RCU grace
// period for every unmount: on a kernel in its default mode that was one
// sleep of every jail's init before /health (session 29:
// bench/issue27/session29-perf29.md), for the spare clone made after the
// last mask and closed unused.

// procMaskRun masks the files of a fresh /proc the way Setup does
// (maskProcFiles), in a mount
// namespace of its own on a thread that ends afterwards, over a tmpfs
// stage in dir, and returns what check says about the builder before it
// closes its descriptors, with the thread's voluntary context switches
// and CPU time from the clone of the first mask to the end of closeAll.
func procMaskRun(dir string, check func(b *builder) error) (nvcsw int64, cpu time.Duration, err error) {
	type result struct {
		nvcsw int64
		cpu   time.Duration
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its mount namespace
		var r result
		r.err = func() error {
			if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
				return err
			}
			proc := filepath.Join(dir, "proc")
			if err := os.Mkdir(proc, 0o555); err != nil {
				return err
			}
			if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				return err
			}
			var ru0, ru1 unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
			b := &builder{root: dir, devNull: -1}
			// As cloneSources does: the first mask's clone.
			t, err := cloneTree(unix.AT_FDCWD, "/dev/null", "/dev/null", maskAttrs, false)
			if err != nil {
				return err
			}
			b.devNull = t.fd
			err = b.maskProcFiles(proc)
			if err == nil && check != nil {
				err = check(b)
			}
			b.closeAll()
			_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
			r.nvcsw = ru1.Nvcsw - ru0.Nvcsw
			r.cpu = time.Duration(unix.TimevalToNsec(ru1.Utime) + unix.TimevalToNsec(ru1.Stime) - unix.TimevalToNsec(ru0.Utime) - unix.TimevalToNsec(ru0.Stime))
			return err
		}()
		ch <- r
	}()
	r := <-ch
	return r.nvcsw, r.cpu, r.err
}

// TestProcMasksLeaveNoDetachedClone: every /proc file of procMasked that
// exists is covered by a read-only /dev/null, and once the masks are
// placed no clone of /dev/null is left detached for closeAll to
// dissolve (each dissolve waits an RCU grace period). Fails with a spare
// clone made after the last mask.
func TestProcMasksLeaveNoDetachedClone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	var null unix.Stat_t
	if err := unix.Stat("/dev/null", &null); err != nil {
		t.Fatal(err)
	}
	masked := 0
	_, _, err := procMaskRun(t.TempDir(), func(b *builder) error {
		if b.devNull >= 0 {
			t.Errorf("a clone of /dev/null (fd %d) is left detached after the masks: its close waits an RCU grace period", b.devNull)
		}
		for _, name := range procMasked {
			p := filepath.Join(b.path("/proc"), name)
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				continue
			}
			masked++
			if st.Rdev != null.Rdev || st.Mode&unix.S_IFMT != unix.S_IFCHR {
				t.Errorf("/proc/%s is not /dev/null: mode %#o rdev %#x", name, st.Mode, st.Rdev)
			}
			var fs unix.Statfs_t
			if err := unix.Statfs(p, &fs); err != nil {
				t.Errorf("statfs /proc/%s: %v", name, err)
			} else if fs.Flags&unix.ST_RDONLY == 0 {
				t.Errorf("/proc/%s is writable: flags %#x", name, fs.Flags)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if masked < 2 {
		t.Fatalf("%d /proc files masked: the test needs at least two", masked)
	}
}

// BenchmarkProcMasks is placeProc's file masks, then closeAll,
// in a mount namespace of its own (procMaskRun). Reported per op: the
// thread's voluntary context switches (an RCU grace period waited for
// is one: a detached clone dissolved at its close) and its CPU time.
func BenchmarkProcMasks(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounts need root")
	}
	var nvcsw int64
	var cpu time.Duration
	for b.Loop() {
		n, c, err := procMaskRun(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		nvcsw += n
		cpu += c
	}
	b.ReportMetric(float64(nvcsw)/float64(b.N), "nvcsw/op")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "thread-cpu-µs/op")
}
