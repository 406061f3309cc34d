//go:build linux

package local

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkDeleteServer is the delete of a cold-created sandbox with the
// server's defaults (BenchmarkCreateDeleteServer's), measured apart from
// the create: before each delete the prepared pool's refill and the last
// delete's removal after its answer are waited for, so nothing else of
// the driver runs beside it. The delete's goroutine is locked to its
// thread, whose counts are the request path's: delete-vcsw (its
// voluntary context switches: every sleep, an RCU grace period's or an
// I/O's, and the wait for the jail's reap) and delete-thread-cpu-us.
// delete-ms is the time to the answer; tail-ms the removal's time after
// it (removals.go); removal-cpu-us the test process's CPU over both.
func BenchmarkDeleteServer(b *testing.B) {
	d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: 2, Clones: ClonesAuto})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	ctx := context.Background()
	var deleting, tail, threadCPU, cpu time.Duration
	var vcsw, ivcsw int64
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("d%d", i)
		i++
		if _, err := d.Create(ctx, model.Spec{ID: id}); err != nil {
			b.Fatal(err)
		}
		for d.preparedReady() < 2 {
			time.Sleep(100 * time.Microsecond)
		}
		settleRemovals(b, d)
		cpu0 := selfCPU(b)
		ru0, ru1, t0, t1 := deleteOnThread(b, d, id)
		settleRemovals(b, d)
		tail += time.Since(t1)
		cpu += selfCPU(b) - cpu0
		deleting += t1.Sub(t0)
		vcsw, ivcsw = vcsw+ru1.Nvcsw-ru0.Nvcsw, ivcsw+ru1.Nivcsw-ru0.Nivcsw
		threadCPU += time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	}
	n := float64(i)
	b.ReportMetric(float64(deleting.Microseconds())/1e3/n, "delete-ms/op")
	b.ReportMetric(float64(tail.Microseconds())/1e3/n, "tail-ms/op")
	b.ReportMetric(float64(vcsw)/n, "delete-vcsw/op")
	b.ReportMetric(float64(ivcsw)/n, "delete-ivcsw/op")
	b.ReportMetric(float64(threadCPU.Microseconds())/n, "delete-thread-cpu-us/op")
	b.ReportMetric(float64(cpu.Microseconds())/n, "removal-cpu-us/op")
}

// deleteOnThread deletes sandbox id from a goroutine locked to its
// thread, returning the thread's usage before and after and the times.
func deleteOnThread(b *testing.B, d *Driver, id string) (ru0, ru1 unix.Rusage, t0, t1 time.Time) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru0); err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	err := d.Delete(context.Background(), id)
	t1 = time.Now()
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru1); err != nil {
		b.Fatal(err)
	}
	return ru0, ru1, t0, t1
}

// settleRemovals waits until no removal of d runs after its answer.
func settleRemovals(b *testing.B, d *Driver) {
	if err := d.removals.wait(context.Background()); err != nil {
		b.Fatal(err)
	}
}
