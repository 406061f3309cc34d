//go:build linux

package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkCreateDeleteServer is a cold create and its delete with the
// server's defaults (issue 27): a prepared pool of 2 refilled between
// creates (its refill counted: it is each create's CPU), disks cloned on
// the XFS pool when the host can, the sidecar from its huge-page copy.
// Besides the time it reports CPU per create + delete + refill: the test
// process's own (getrusage: the driver), the spawner's helper's (the
// jail's clone: its namespaces, its copy of the mount namespace) and the
// jail's until the delete (its start, Setup's pivot_root and detach of
// the copied mounts, its sidecar's start), each the sum of its threads'
// schedstat.
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
	cpu0, sp0 := selfCPU(b), procRuntime(b, helper)
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
		jail += procRuntime(b, st.PID)
		t1 = t1.Add(time.Since(t1)) // the reads are no part of the delete
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		creating, deleting = creating+t1.Sub(t0), deleting+time.Since(t1)
		for d.preparedReady() < 2 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	cpu, spawner := selfCPU(b)-cpu0, procRuntime(b, helper)-sp0
	n := float64(i)
	b.ReportMetric(float64(creating.Microseconds())/1e3/n, "create-ms/op")
	b.ReportMetric(float64(deleting.Microseconds())/1e3/n, "delete-ms/op")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/n, "driver-cpu-ms/op")
	b.ReportMetric(float64(spawner.Microseconds())/n, "spawner-cpu-us/op")
	b.ReportMetric(float64(jail.Microseconds())/n, "jail-cpu-us/op")
}
