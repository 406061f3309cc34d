package jail

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkPivotRoot is the pivot_root(".", ".") of a jail's pivot onto a
// new root, in a mount namespace of its own, on a thread that ends after
// it (issue 27). pivot_root walks every thread of the host
// (chroot_fs_refs) for those whose root or working directory is the old
// root, so its cost grows with the host's threads: the sub-benchmarks add
// idle threads, held by this process, to what the host runs. Reported:
// the pivoting thread's CPU time in the call (pivot-cpu-µs/op), and the
// host's threads while it ran (host-threads).
func BenchmarkPivotRoot(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("pivot_root needs root")
	}
	for _, extra := range []int{0, 4000, 8000, 12000} {
		for _, move := range []bool{false, true} {
			name := fmt.Sprintf("extra-threads=%d/switch=pivot_root", extra)
			if move {
				name = fmt.Sprintf("extra-threads=%d/switch=move+chroot", extra)
			}
			b.Run(name, func(b *testing.B) {
				release := spareThreads(b, extra)
				defer release()
				host := hostThreads(b)
				var cpu time.Duration
				for b.Loop() {
					d, err := pivotOnce(b.TempDir(), move)
					if err != nil {
						b.Fatal(err)
					}
					cpu += d
				}
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "pivot-cpu-µs/op")
				b.ReportMetric(float64(host), "host-threads")
			})
		}
	}
}

// pivotOnce pivots a new locked thread, in a new mount namespace, onto a
// tmpfs mounted at dir, and returns the thread's CPU time in pivot_root.
// With move, it switches root the way session 18's rejected alternative
// would (the new root moved onto / and chroot into it, which leaves the
// old root mounted beneath: see bench/issue27/session24-cold27.md) and
// returns the CPU time of that instead. The thread ends with its
// goroutine, since its root is no longer the process's.
func pivotOnce(dir string, move bool) (time.Duration, error) {
	type result struct {
		cpu time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		cpu, err := func() (time.Duration, error) {
			if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
				return 0, fmt.Errorf("unshare: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return 0, fmt.Errorf("make mounts private: %w", err)
			}
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
				return 0, fmt.Errorf("mount root: %w", err)
			}
			if err := unix.Chdir(dir); err != nil {
				return 0, err
			}
			var t0, t1 unix.Timespec
			if move {
				_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
				err := unix.Mount(".", "/", "", unix.MS_MOVE, "")
				if err == nil {
					err = unix.Chroot(".")
				}
				_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
				if err != nil {
					return 0, fmt.Errorf("move root: %w", err)
				}
				return time.Duration(t1.Nano() - t0.Nano()), nil
			}
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
			err := unix.PivotRoot(".", ".")
			_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
			if err != nil {
				return 0, fmt.Errorf("pivot root: %w", err)
			}
			if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
				return 0, fmt.Errorf("detach old root: %w", err)
			}
			return time.Duration(t1.Nano() - t0.Nano()), nil
		}()
		done <- result{cpu, err}
	}()
	r := <-done
	return r.cpu, r.err
}

// spareThreads starts n threads of this process, each blocked in a read
// of a pipe, and returns what ends them.
func spareThreads(tb testing.TB, n int) (release func()) {
	if n == 0 {
		return func() {}
	}
	prev := debug.SetMaxThreads(n + 10000)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	var started, ended sync.WaitGroup
	for range n {
		started.Add(1)
		ended.Add(1)
		go func() {
			defer ended.Done()
			runtime.LockOSThread() // the thread ends with the goroutine
			started.Done()
			var buf [1]byte
			_, _ = unix.Read(p[0], buf[:])
		}()
	}
	started.Wait()
	return func() {
		unix.Close(p[1])
		ended.Wait()
		unix.Close(p[0])
		debug.SetMaxThreads(prev)
	}
}

// hostThreads reads the host's threads (all tasks, kernel threads too)
// from /proc/loadavg.
func hostThreads(tb testing.TB) int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b))
	_, total, ok := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(total)
	if !ok || err != nil {
		tb.Fatalf("read /proc/loadavg: %q", b)
	}
	return n
}
