//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"golang.org/x/sys/unix"
)

// BenchmarkColdPhases splits a prepared cold create (issue 27) into the
// driver's phases, as Create runs them: taking a prepared slot, starting
// the jail (jail.Start and the state file), waiting for the sidecar's
// /health, and the first exec. Besides the times it reports the load-
// independent counts of the jail's one process (its init and sidecar):
// the page faults and CPU ticks it took until /health answered, and
// those the first exec added (from /proc/PID/stat; the fault counts
// include the pages a madvise(MADV_POPULATE_*) maps, which take no trap),
// its CPU time in ns to the same two points (cpu-us-*: the schedstat of
// its threads, finer than the ticks), and the page faults
// and CPU time of the driver's own process during the start (a jail
// cloned by the driver itself is a full fork of it: a new user namespace
// rules out CLONE_VM, so the driver's page tables are copied and its
// pages are copy-on-write until written again). The prepared pool's
// refill is waited for before each start, so the driver runs nothing
// else meanwhile.
//
// spawner: whether jails are cloned by the spawner's helper process
// (jail.Spawner) or by the driver; the helper's page faults and CPU ticks
// during the start are reported too. heap: a resident ballast that makes
// the driver's process the size of a busy server's, which a fork of it
// copies the page tables of.
func BenchmarkColdPhases(b *testing.B) {
	for _, heap := range []int{0, 256} {
		for _, spawner := range []bool{false, true} {
			b.Run(fmt.Sprintf("heap=%dMiB/spawner=%v", heap, spawner), func(b *testing.B) {
				ballast := make([]byte, heap<<20)
				for i := 0; i < len(ballast); i += 4096 {
					ballast[i] = 1
				}
				d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: 2})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
				if !spawner {
					_ = d.spawner.Close()
				}
				benchColdPhases(b, d)
				runtime.KeepAlive(ballast)
			})
		}
	}
}

// phaseCounts are BenchmarkColdPhases's sums over its iterations.
type phaseCounts struct {
	take, start, health, first                       time.Duration
	healthFaults, execFaults, healthTicks, execTicks int64
	healthCPU, execCPU                               time.Duration
	healthSwitches, healthThreads                    int64
	driverFaults, helperFaults, helperTicks          int64
	driverCPU                                        time.Duration
}

func benchColdPhases(b *testing.B, d *Driver) {
	ctx := context.Background()
	var c phaseCounts
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
		c.take += time.Since(t0)
		b.StopTimer()
		for d.preparedReady() < 2 { // the refill, not part of a start
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		t1 := time.Now()
		helper := d.spawner.PID()
		var hf0, hc0, hf1, hc1 int64
		if helper != 0 {
			hf0, hc0 = procFaults(b, helper)
		}
		df0, _ := procFaults(b, os.Getpid())
		cpu0 := selfCPU(b)
		done, err := d.start(p, token, dir)
		cpu1 := selfCPU(b)
		df1, _ := procFaults(b, os.Getpid())
		if helper != 0 {
			hf1, hc1 = procFaults(b, helper)
		}
		_ = p.lease.Close()
		if p.js.NetNS != nil {
			_ = p.js.NetNS.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := waitHealthy(ctx, nil, ep, d.cfg.HealthTimeout, done); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		b.StopTimer()
		st, err := readState(dir)
		if err != nil {
			b.Fatal(err)
		}
		f0, c0 := procFaults(b, st.PID)
		r0 := procRuntime(b, st.PID)
		sw, th := procSwitches(b, st.PID)
		c.healthSwitches, c.healthThreads = c.healthSwitches+sw, c.healthThreads+th
		b.StartTimer()
		d.track(id)
		if res := run(b, ep, "true"); res.ExitCode != 0 {
			b.Fatalf("first exec: %+v", res)
		}
		t4 := time.Now()
		b.StopTimer()
		f1, c1 := procFaults(b, st.PID)
		r1 := procRuntime(b, st.PID)
		c.healthCPU, c.execCPU = c.healthCPU+r0, c.execCPU+r1-r0
		c.start, c.health, c.first = c.start+t2.Sub(t1), c.health+t3.Sub(t2), c.first+t4.Sub(t3)
		c.healthFaults, c.execFaults, c.driverFaults = c.healthFaults+f0, c.execFaults+f1-f0, c.driverFaults+df1-df0
		c.healthTicks, c.execTicks, c.driverCPU = c.healthTicks+c0, c.execTicks+c1-c0, c.driverCPU+cpu1-cpu0
		c.helperFaults, c.helperTicks = c.helperFaults+hf1-hf0, c.helperTicks+hc1-hc0
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	c.report(b, float64(i))
}

func (c phaseCounts) report(b *testing.B, n float64) {
	ms := func(t time.Duration) float64 { return float64(t.Microseconds()) / 1e3 / n }
	b.ReportMetric(ms(c.take), "take-ms/op")
	b.ReportMetric(ms(c.start), "start-ms/op")
	b.ReportMetric(ms(c.health), "health-ms/op")
	b.ReportMetric(ms(c.first), "exec-ms/op")
	b.ReportMetric(float64(c.healthFaults)/n, "faults-to-health/op")
	b.ReportMetric(float64(c.execFaults)/n, "faults-first-exec/op")
	b.ReportMetric(float64(c.driverFaults)/n, "driver-faults-start/op")
	b.ReportMetric(ms(c.driverCPU), "driver-cpu-ms-start/op")
	b.ReportMetric(float64(c.helperFaults)/n, "spawner-faults-start/op")
	b.ReportMetric(float64(c.helperTicks)/n, "spawner-ticks-start/op")
	b.ReportMetric(float64(c.healthTicks)/n, "ticks-to-health/op")
	b.ReportMetric(float64(c.healthCPU.Microseconds())/n, "cpu-us-to-health/op")
	b.ReportMetric(float64(c.execCPU.Microseconds())/n, "cpu-us-first-exec/op")
	b.ReportMetric(float64(c.execTicks)/n, "ticks-first-exec/op")
	b.ReportMetric(float64(c.healthSwitches)/n, "switches-to-health/op")
	b.ReportMetric(float64(c.healthThreads)/n, "threads-at-health/op")
}

// selfCPU is the user+system CPU time of this process so far (all its
// threads; its children's not counted).
func selfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procRuntime is the CPU time pid's live threads have run so far
// (/proc/PID/task/*/schedstat, in ns: finer than the clock ticks of
// procFaults; a thread that ended is not counted).
func procRuntime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var sum time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // ended meanwhile
		}
		f := strings.Fields(string(raw))
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// procSwitches returns the context switches (voluntary and not) of pid's
// threads so far, and how many threads it has: the jail's start hands its
// P between threads, and each all-thread call of its lockdown signals
// every thread (issue 27).
func procSwitches(tb testing.TB, pid int) (switches, threads int64) {
	tb.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue // ended meanwhile
		}
		threads++
		for line := range strings.Lines(string(raw)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					tb.Fatal(err)
				}
				switches += n
			}
		}
	}
	return switches, threads
}

// procFaults returns the minor+major page faults and the user+system
// clock ticks of pid so far (its children's not counted).
func procFaults(tb testing.TB, pid int) (faults, ticks int64) {
	tb.Helper()
	num := statFields(tb, pid)
	return num(10) + num(12), num(14) + num(15)
}

// statFields reads /proc/PID/stat once and returns its numeric fields by
// their number in proc(5) (10: minflt, 12: majflt, 20: num_threads, …).
func statFields(tb testing.TB, pid int) func(field int) int64 {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command's closing parenthesis, from field 3 (state).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	return func(field int) int64 {
		v, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}
