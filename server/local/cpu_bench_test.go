//go:build linux

package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"golang.org/x/sys/unix"
)

// BenchmarkCreateDeleteServer is a cold create and its delete with the
// server's defaults (issue 27): a prepared pool of 2 refilled between
// creates (its refill counted: it is each create's CPU), disks cloned on
// the XFS pool when the host can, the sidecar from its huge-page copy.
// Besides the time it reports CPU per create + delete + refill: the test
// process's own (getrusage: the driver), the spawner's helper's (the
// jail's clone: its namespaces, its copy of the mount namespace; its
// process CPU clock, procCPU) and the jail's until the delete (its start,
// Setup, its sidecar's start: its cgroup's CPU accounting, jailCPU).
func BenchmarkCreateDeleteServer(b *testing.B) {
	d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: 2, Clones: ClonesAuto})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	ctx := context.Background()
	create(b, d, "template")
	if err := d.Delete(ctx, "template"); err != nil {
		b.Fatal(err)
	}
	for d.preparedReady() < 2 {
		time.Sleep(time.Millisecond)
	}
	i := 0
	var creating, deleting, jail, spawner time.Duration
	helper := d.spawner.PID()
	if helper == 0 {
		b.Fatal("no spawner helper runs")
	}
	cpu0, sp0 := selfCPU(b), procCPU(b, helper)
	for b.Loop() {
		id := fmt.Sprintf("b%d", i)
		i++
		t0 := time.Now()
		if _, err := d.Create(ctx, model.Spec{ID: id}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			b.Fatal(err)
		}
		jail += jailCPU(b, st)
		t1 = t1.Add(time.Since(t1)) // the reads are no part of the delete
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		creating, deleting = creating+t1.Sub(t0), deleting+time.Since(t1)
		for d.preparedReady() < 2 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	cpu, spawner := selfCPU(b)-cpu0, procCPU(b, helper)-sp0
	n := float64(i)
	b.ReportMetric(float64(creating.Microseconds())/1e3/n, "create-ms/op")
	b.ReportMetric(float64(deleting.Microseconds())/1e3/n, "delete-ms/op")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/n, "driver-cpu-ms/op")
	b.ReportMetric(float64(spawner.Microseconds())/n, "spawner-cpu-us/op")
	b.ReportMetric(float64(jail.Microseconds())/n, "jail-cpu-us/op")
}

// jailCPU is the CPU a jail's processes used so far, from its cgroup's
// accounting (cpu.stat or cpuacct.usage), not from
// /proc/PID/task/*/schedstat: a lookup there leaves a dentry per thread
// in the host's proc, and the driver's reap of the killed jail then
// spins in shrink_dcache_parent while the exiting threads drop those
// same dentries. Under load that spin cost the driver ~6 ms of CPU per
// delete, half the driver CPU this benchmark reported
// (bench/issue27/session28-perf28.md).
func jailCPU(tb testing.TB, st state) time.Duration {
	tb.Helper()
	u, err := st.Cgroup.Usage()
	if err != nil {
		tb.Fatal(err)
	}
	if u.CPUMicros <= 0 {
		tb.Fatalf("jail cgroup %v: no CPU accounting", st.Cgroup.Dirs)
	}
	return time.Duration(u.CPUMicros) * time.Microsecond
}

// procCPU is the CPU time process pid used so far, all its threads', the
// ended ones' too (the spawner's helper ends a thread per jail, which
// /proc/PID/task/*/schedstat no longer shows): its process CPU-time
// clock, clock_getcpuclockid(3)'s, read with clock_gettime.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	const cpuclockSched = 2 // CPUCLOCK_SCHED, the scheduler's ns count
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|cpuclockSched), &ts); err != nil {
		tb.Fatalf("read the CPU clock of %d: %v", pid, err)
	}
	return time.Duration(ts.Nano())
}
