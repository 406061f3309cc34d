package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkColdPhases splits a prepared cold create (issue 27) into the
// driver's phases, as Create runs them: taking a prepared slot, starting
// the jail (jail.Start and the state file), waiting for the sidecar's
// /health, and the first exec. Besides the times it reports the load-
// independent counts of the jail's one process (its init and sidecar):
// the page faults and CPU ticks it took until /health answered, and
// those the first exec added (from /proc/PID/stat), and the page faults
// of the driver's own process during the start (the jail's clone is a
// full fork of it: a new user namespace rules out CLONE_VM, so the
// driver's pages are copy-on-write until the child execs; other
// goroutines' faults in that window are counted too).
func BenchmarkColdPhases(b *testing.B) {
	d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	ctx := context.Background()
	var take, start, health, first time.Duration
	var healthFaults, execFaults, healthTicks, execTicks, driverFaults int64
	i := 0
	for b.Loop() {
		b.StopTimer()
		for d.preparedReady() < 2 {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		id := fmt.Sprintf("p%d", i)
		i++
		dir := d.sandboxDir(id)
		t0 := time.Now()
		p, ready, err := d.takePrepared(ctx, model.Spec{ID: id}, dir)
		if err != nil || !ready {
			b.Fatalf("take prepared: %v %v", ready, err)
		}
		token, err := newToken()
		if err != nil {
			b.Fatal(err)
		}
		ep := model.Endpoint{Network: "unix", Address: dir + "/" + sidecarSocket, Token: token}
		t1 := time.Now()
		df0, _ := procFaults(b, os.Getpid())
		done, err := d.start(p, token, dir)
		df1, _ := procFaults(b, os.Getpid())
		_ = p.lease.Close()
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := waitHealthy(ctx, ep, d.cfg.HealthTimeout, done); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		b.StopTimer()
		st, err := readState(dir)
		if err != nil {
			b.Fatal(err)
		}
		f0, c0 := procFaults(b, st.PID)
		b.StartTimer()
		d.track(id)
		if res := run(b, ep, "true"); res.ExitCode != 0 {
			b.Fatalf("first exec: %+v", res)
		}
		t4 := time.Now()
		b.StopTimer()
		f1, c1 := procFaults(b, st.PID)
		take, start, health, first = take+t1.Sub(t0), start+t2.Sub(t1), health+t3.Sub(t2), first+t4.Sub(t3)
		healthFaults, execFaults, driverFaults = healthFaults+f0, execFaults+f1-f0, driverFaults+df1-df0
		healthTicks, execTicks = healthTicks+c0, execTicks+c1-c0
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(i)
	ms := func(t time.Duration) float64 { return float64(t.Microseconds()) / 1e3 / n }
	b.ReportMetric(ms(take), "take-ms/op")
	b.ReportMetric(ms(start), "start-ms/op")
	b.ReportMetric(ms(health), "health-ms/op")
	b.ReportMetric(ms(first), "exec-ms/op")
	b.ReportMetric(float64(healthFaults)/n, "faults-to-health/op")
	b.ReportMetric(float64(execFaults)/n, "faults-first-exec/op")
	b.ReportMetric(float64(driverFaults)/n, "driver-faults-start/op")
	b.ReportMetric(float64(healthTicks)/n, "ticks-to-health/op")
	b.ReportMetric(float64(execTicks)/n, "ticks-first-exec/op")
}

// procFaults returns the minor+major page faults and the user+system
// clock ticks of pid so far (its children's not counted).
func procFaults(tb testing.TB, pid int) (faults, ticks int64) {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command's closing parenthesis, from field 3 (state).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	num := func(field int) int64 {
		v, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	return num(10) + num(12), num(14) + num(15)
}
