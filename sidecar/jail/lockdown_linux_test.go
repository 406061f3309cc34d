package jail

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShareCgroupNamespaceProbes: ShareCgroupNamespace is the probe for
// reachable threads of a jail's init not born in its cgroup namespace
// (Launch.CgroupNS; issue 27: each all-thread call stops the world), so
// the runtime's refusal in a cgo binary must come back as
// ErrThreadsUnreachable, which runInit falls back on, and a reachable
// process makes exactly one all-thread call, the setns.
func TestShareCgroupNamespaceProbes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		want  error
	}{
		{"reachable", 0, nil},
		{"cgo", unix.ENOTSUP, ErrThreadsUnreachable},
		{"refused", unix.EPERM, unix.EPERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var traps []uintptr
			call := func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
				traps = append(traps, trap)
				return 0, 0, tc.errno
			}
			err := shareCgroupNamespace(call)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("shareCgroupNamespace = %v, want %v", err, tc.want)
			}
			if len(traps) != 1 || traps[0] != unix.SYS_SETNS {
				t.Errorf("all-thread calls %v, want one setns (%d)", traps, unix.SYS_SETNS)
			}
		})
	}
}

// TestAllThreadsCallsRefused: an all-thread prctl or capset refused by the
// runtime (cgo) is ErrThreadsUnreachable, as LockdownProcess documents.
func TestAllThreadsCallsRefused(t *testing.T) {
	on := allThreads{func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
		return 0, 0, unix.ENOTSUP
	}}
	if err := on.prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0); !errors.Is(err, ErrThreadsUnreachable) {
		t.Errorf("prctl = %v, want ErrThreadsUnreachable", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := on.capset(&hdr, &data[0]); !errors.Is(err, ErrThreadsUnreachable) {
		t.Errorf("capset = %v, want ErrThreadsUnreachable", err)
	}
}

// BenchmarkShareCgroupNamespace is the all-thread setns a jail's init no
// longer makes when its clone made its cgroup namespace (Launch.CgroupNS;
// issue 27), into this process's own namespace: it stops the world and
// signals each thread. It reports the process's CPU time per call and its
// threads. Build it without cgo (CGO_ENABLED=0), whose runtime refuses
// all-thread calls.
func BenchmarkShareCgroupNamespace(b *testing.B) {
	if err := ShareCgroupNamespace(); err != nil {
		b.Fatalf("share cgroup namespace: %v (build without cgo: CGO_ENABLED=0)", err)
	}
	var r0, r1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &r0)
	for b.Loop() {
		if err := ShareCgroupNamespace(); err != nil {
			b.Fatal(err)
		}
	}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(tasks)), "threads")
}
