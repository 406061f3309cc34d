//go:build linux

package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkColdFirstExec is the cold path of issue 27 inside the driver:
// a create with no warm pool, then the first exec (`true`) answered by the
// new jail's sidecar; the delete is outside the timing. prepared: with a
// prepared pool (Config.Prepared), refilled between creates. gap: a pause
// between the create's return and the first exec, standing in for what
// the control plane does there (its commit, the create's answer, the
// client's next request), in which a sidecar could work in the background
// (session10-cold10 measured a warm-up exec there); without one the first
// exec comes at once. Besides the times it reports the first exec's own
// counts in the jail's process, from the end of the gap: its page faults
// and CPU time (schedstat of its threads); and the driver's own user and
// system CPU time during the create (getrusage of the test process: with
// prepared slots the refill after the take is mostly outside it).
func BenchmarkColdFirstExec(b *testing.B) {
	for _, c := range []struct {
		prepared int
		gap      time.Duration
	}{{0, 0}, {2, 0}, {2, 5 * time.Millisecond}} {
		name := fmt.Sprintf("prepared=%d", c.prepared)
		if c.gap > 0 {
			name += fmt.Sprintf("/gap=%v", c.gap)
		}
		b.Run(name, func(b *testing.B) {
			d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin, Prepared: c.prepared})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
			// The disk template is made once for a host, by the first
			// create: not one of the creates measured.
			create(b, d, "template")
			if err := d.Delete(context.Background(), "template"); err != nil {
				b.Fatal(err)
			}
			benchFirstExec(b, d, c.prepared, c.gap)
		})
	}
}

func benchFirstExec(b *testing.B, d *Driver, prepared int, gap time.Duration) {
	ctx := context.Background()
	i := 0
	var created, answered, exec, execCPU, createUser, createSys time.Duration
	var execFaults int64
	for b.Loop() {
		b.StopTimer()
		for prepared > 0 && d.preparedReady() < prepared {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		id := fmt.Sprintf("c%d", i)
		i++
		u0, s0 := selfUserSys(b)
		t0 := time.Now()
		ep, err := d.Create(ctx, model.Spec{ID: id})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		u1, s1 := selfUserSys(b)
		createUser, createSys = createUser+u1-u0, createSys+s1-s0
		time.Sleep(gap)
		b.StopTimer()
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			b.Fatal(err)
		}
		f0, _ := procFaults(b, st.PID)
		r0 := procRuntime(b, st.PID)
		b.StartTimer()
		t2 := time.Now()
		if res := run(b, ep, "true"); res.ExitCode != 0 {
			b.Fatalf("first exec: %+v", res)
		}
		t3 := time.Now()
		b.StopTimer()
		f1, _ := procFaults(b, st.PID)
		r1 := procRuntime(b, st.PID)
		created, answered, exec = created+t1.Sub(t0), answered+t1.Sub(t0)+t3.Sub(t2), exec+t3.Sub(t2)
		execFaults, execCPU = execFaults+f1-f0, execCPU+r1-r0
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	n := float64(i)
	b.ReportMetric(float64(created.Microseconds())/1e3/n, "create-ms/op")
	b.ReportMetric(float64(answered.Microseconds())/1e3/n, "first-exec-ms/op") // create + exec, the gap left out
	b.ReportMetric(float64(exec.Microseconds())/1e3/n, "exec-ms/op")
	b.ReportMetric(float64(execFaults)/n, "faults-first-exec/op")
	b.ReportMetric(float64(execCPU.Microseconds())/n, "cpu-us-first-exec/op")
	b.ReportMetric(float64(createUser.Microseconds())/n, "driver-user-us-create/op")
	b.ReportMetric(float64(createSys.Microseconds())/n, "driver-sys-us-create/op")
}

// selfUserSys is the test process's user and system CPU time so far
// (getrusage): the driver's, since the jails are the spawner's children.
func selfUserSys(tb testing.TB) (user, sys time.Duration) {
	tb.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkSidecarExec is an exec round trip at the driver's edge (issue
// 27, acceptance 2): `true` run by a jail's sidecar over one kept-alive
// connection, as the control plane's cached client sends it, without the
// control plane; sidecar-transport sends it with net/http's Transport, as
// that client did before it carried small requests itself (session 7's
// leanTransport). spawn is F of `boxkite bench` in the same process: a
// bare spawn of /bin/true. sidecar-uname runs a program that is no shell
// builtin. sidecar-idle is `true` after 1.5 s without a request (past the
// sidecar's thread trim), what `boxkite bench` sees between sandboxes; its
// exec-ms/op is the exec's time (its ns/op includes the wait). A sandbox
// allows 500 execs a session: -benchtime at most ~490x.
//
// Besides the time, counts the load does not change, per exec: the test
// process's own CPU time, page faults and context switches (getrusage:
// the client, or for spawn the spawner), the faults of the commands it
// reaped (RUSAGE_CHILDREN), and for the sidecar its own: CPU time (the
// sum of its threads' schedstat), page faults, its commands' faults,
// context switches and threads started.
func BenchmarkSidecarExec(b *testing.B) {
	b.Run("spawn", func(b *testing.B) {
		c0 := takeCounts(b, 0)
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		takeCounts(b, 0).sub(c0).report(b, false)
	})
	for _, bc := range []struct {
		name, command string
		idle          time.Duration
		transport     bool // net/http's Transport, not the control plane's client
	}{
		{"sidecar", "true", 0, false},
		{"sidecar-transport", "true", 0, true},
		{"sidecar-uname", "uname", 0, false},
		{"sidecar-idle", "true", 1500 * time.Millisecond, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Shutdown(context.Background()) })
			ep, err := d.Create(context.Background(), model.Spec{ID: "rtt"})
			if err != nil {
				b.Fatal(err)
			}
			st, err := readState(d.sandboxDir("rtt"))
			if err != nil {
				b.Fatal(err)
			}
			c, err := sidecar.NewClients().Client("rtt", ep)
			if err != nil {
				b.Fatal(err)
			}
			if bc.transport {
				c = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", ep.Address)
				}}}
			}
			runWith(b, c, ep, bc.command) // the connection made and the sidecar's first-request work done
			// Counted around each exec when idle (the trim and the reaper's
			// wakes in between are not the exec's), else around the loop.
			// The idle wait stays in ns/op, so that the default -benchtime
			// runs it once, not for minutes; exec-ms/op is the exec's.
			var sum execCounts
			var execs time.Duration
			c0 := takeCounts(b, st.PID)
			for b.Loop() {
				if bc.idle > 0 {
					time.Sleep(bc.idle)
					c0 = takeCounts(b, st.PID)
				}
				t0 := time.Now()
				if res := runWith(b, c, ep, bc.command); res.ExitCode != 0 {
					b.Fatalf("exec %s: %+v", bc.command, res)
				}
				execs += time.Since(t0)
				if bc.idle > 0 {
					sum = sum.add(takeCounts(b, st.PID).sub(c0))
				}
			}
			if bc.idle == 0 {
				sum = takeCounts(b, st.PID).sub(c0)
			}
			sum.report(b, true)
			if bc.idle > 0 {
				b.ReportMetric(float64(execs.Microseconds())/1e3/float64(b.N), "exec-ms/op")
			}
		})
	}
}

// execCounts are the counts BenchmarkSidecarExec reports.
type execCounts struct {
	n                                    int64
	selfCPU                              time.Duration
	selfFaults, selfSwitches, kidFlt     int64
	scCPU                                time.Duration
	scFaults, scKidFaults, scSw, scTasks int64
}

// takeCounts reads this process's counts and, when pid is not 0, the
// sidecar pid's.
func takeCounts(tb testing.TB, pid int) execCounts {
	tb.Helper()
	var self, kids unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &self); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &kids); err != nil {
		tb.Fatal(err)
	}
	c := execCounts{
		n: 1, selfCPU: time.Duration(self.Utime.Nano() + self.Stime.Nano()),
		selfFaults: self.Minflt + self.Majflt, selfSwitches: self.Nvcsw + self.Nivcsw, kidFlt: kids.Minflt + kids.Majflt,
	}
	if pid == 0 {
		return c
	}
	num := statFields(tb, pid)
	c.scFaults, c.scKidFaults = num(10)+num(12), num(11)+num(13)
	c.scTasks = num(20) // threads now; the difference is threads started minus ended
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
		if ss, err := os.ReadFile(dir + "schedstat"); err == nil {
			if ns, err := strconv.ParseInt(strings.Fields(string(ss))[0], 10, 64); err == nil {
				c.scCPU += time.Duration(ns)
			}
		}
		if status, err := os.ReadFile(dir + "status"); err == nil {
			for line := range strings.Lines(string(status)) {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					c.scSw += n
				}
			}
		}
	}
	return c
}

func (c execCounts) sub(o execCounts) execCounts {
	return execCounts{
		n: c.n, selfCPU: c.selfCPU - o.selfCPU, selfFaults: c.selfFaults - o.selfFaults,
		selfSwitches: c.selfSwitches - o.selfSwitches, kidFlt: c.kidFlt - o.kidFlt,
		scCPU: c.scCPU - o.scCPU, scFaults: c.scFaults - o.scFaults, scKidFaults: c.scKidFaults - o.scKidFaults,
		scSw: c.scSw - o.scSw, scTasks: c.scTasks - o.scTasks,
	}
}

func (c execCounts) add(o execCounts) execCounts {
	return execCounts{
		n: c.n + o.n, selfCPU: c.selfCPU + o.selfCPU, selfFaults: c.selfFaults + o.selfFaults,
		selfSwitches: c.selfSwitches + o.selfSwitches, kidFlt: c.kidFlt + o.kidFlt,
		scCPU: c.scCPU + o.scCPU, scFaults: c.scFaults + o.scFaults, scKidFaults: c.scKidFaults + o.scKidFaults,
		scSw: c.scSw + o.scSw, scTasks: c.scTasks + o.scTasks,
	}
}

// report reports c per b.N; sidecar adds the sidecar's counts. A sidecar's
// thread count can move by threads a trim ends while the exec runs, so
// sc-tasks/op is threads started minus ended, a floor of those started.
func (c execCounts) report(b *testing.B, sidecar bool) {
	n := float64(b.N)
	b.ReportMetric(float64(c.selfCPU.Microseconds())/n, "self-cpu-us/op")
	b.ReportMetric(float64(c.selfFaults)/n, "self-faults/op")
	b.ReportMetric(float64(c.selfSwitches)/n, "self-cs/op")
	if !sidecar {
		b.ReportMetric(float64(c.kidFlt)/n, "cmd-faults/op")
		return
	}
	b.ReportMetric(float64(c.scCPU.Microseconds())/n, "sc-cpu-us/op")
	b.ReportMetric(float64(c.scFaults)/n, "sc-faults/op")
	b.ReportMetric(float64(c.scKidFaults)/n, "cmd-faults/op")
	b.ReportMetric(float64(c.scSw)/n, "sc-cs/op")
	b.ReportMetric(float64(c.scTasks)/n, "sc-tasks/op")
}
