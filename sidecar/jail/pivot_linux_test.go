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

// BenchmarkPivotRoot is the switch of a jail onto its new root, in a
// mount namespace of its own, on a thread that ends after it (issue 27),
// three ways:
//
//   - pivot_root: pivot_root(".", ".") as pivot does from the host's
//     namespace (a closed Spawner's jails, builds, nested ones). It walks
//     every thread of the host (chroot_fs_refs) for those whose root or
//     working directory is the old root, so its cost grows with the
//     host's threads.
//   - move+chroot: the new root moved onto / and chroot, from the host's
//     namespace: session 18's rejected alternative, which leaves the host's
//     root beneath (bench/issue27/session24-cold27.md).
//   - skeleton: the same move and chroot, from a copy of a skeleton
//     namespace (a tmpfs root made once, as the spawner's helper makes
//     its own: skeleton_linux.go), which is what a Spawner's jail does.
//
// The sub-benchmarks add idle threads, held by this process, to what the
// host runs. Reported: the switching thread's CPU time in the call
// (pivot-cpu-µs/op), and the host's threads while it ran (host-threads).
func BenchmarkPivotRoot(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("pivot_root needs root")
	}
	for _, extra := range []int{0, 4000, 8000, 12000} {
		for _, way := range []switchWay{switchPivot, switchMove, switchSkeleton} {
			b.Run(fmt.Sprintf("extra-threads=%d/switch=%s", extra, way), func(b *testing.B) {
				release := spareThreads(b, extra)
				defer release()
				skeleton := -1
				if way == switchSkeleton {
					skeleton = benchSkeleton(b)
				}
				host := hostThreads(b)
				var cpu time.Duration
				for b.Loop() {
					d, err := pivotOnce(b.TempDir(), way, skeleton)
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

// A switchWay is how pivotOnce switches root.
type switchWay int

const (
	switchPivot switchWay = iota
	switchMove
	switchSkeleton
)

func (w switchWay) String() string {
	return [...]string{"pivot_root", "move+chroot", "skeleton"}[w]
}

// benchSkeleton makes a skeleton namespace for the benchmark, as the
// spawner's helper does (makeSkeleton) but with only the stage in it:
// what a jail's switch does does not depend on what the skeleton holds.
// It returns a descriptor of the namespace, closed with the benchmark.
func benchSkeleton(tb testing.TB) int {
	dir := tb.TempDir()
	ch := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := func() error {
			if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			ns, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			ch <- ns
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
				return err
			}
			if err := os.Mkdir(dir+stage, 0o755); err != nil {
				return err
			}
			return pivot(dir)
		}()
		errc <- err
	}()
	if err := <-errc; err != nil {
		tb.Fatalf("make skeleton: %v", err)
	}
	ns := <-ch
	tb.Cleanup(func() { unix.Close(ns) })
	return ns
}

// pivotOnce switches a new locked thread, in a new mount namespace, onto
// a tmpfs as way says, and returns the thread's CPU time in the switch:
// pivot_root (then the old root detached), or the move onto / and the
// chroot. The tmpfs is mounted at dir, or, for the skeleton way, at the
// stage of a copy of the skeleton namespace skeleton. The thread ends
// with its goroutine, since its root is no longer the process's.
func pivotOnce(dir string, way switchWay, skeleton int) (time.Duration, error) {
	type result struct {
		cpu time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		cpu, err := func() (time.Duration, error) {
			if way == switchSkeleton {
				// As a Spawner's clone thread (inSkeleton), then the
				// jail's copy of its namespace (its clone's CLONE_NEWNS).
				if err := unix.Unshare(unix.CLONE_FS); err != nil {
					return 0, err
				}
				if err := unix.Setns(skeleton, unix.CLONE_NEWNS); err != nil {
					return 0, fmt.Errorf("enter skeleton: %w", err)
				}
				dir = stage
			}
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
			if way != switchPivot {
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
