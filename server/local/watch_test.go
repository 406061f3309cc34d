//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lostReports collects what WatchLost reports, until the test ends.
type lostReports struct {
	mu  sync.Mutex
	ids []string
}

func watchLost(t *testing.T, d *Driver) *lostReports {
	t.Helper()
	r := &lostReports{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.WatchLost(ctx, func(id string) {
			r.mu.Lock()
			r.ids = append(r.ids, id)
			r.mu.Unlock()
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func (r *lostReports) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// waitReported polls until id is reported lost; the bound is the test's
// budget, not the latency promised (that is measured by the fault suite).
func (r *lostReports) waitReported(t *testing.T, id string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if slices.Contains(r.got(), id) {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("sandbox %s was not reported lost; reports: %v", id, r.got())
	return 0
}

// TestWatchLost: a sidecar killed behind the driver's back is reported
// lost, whether this driver started it or adopted it from a previous one;
// a sandbox the driver deletes is not; Probe tells a dead sandbox from a
// live one.
func TestWatchLost(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	reports := watchLost(t, d)
	create(t, d, "victim")
	create(t, d, "deleted")
	create(t, d, "bystander")
	if alive, err := d.Probe(context.Background(), "victim"); err != nil || !alive {
		t.Fatalf("Probe of a running sandbox = %v, %v", alive, err)
	}

	kill := func(id string) {
		t.Helper()
		st, err := readState(d.sandboxDir(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	kill("victim")
	took := reports.waitReported(t, "victim")
	t.Logf("reported lost %v after the kill", took)
	if alive, err := d.Probe(context.Background(), "victim"); err != nil || alive {
		t.Errorf("Probe of a killed sandbox = %v, %v; want false", alive, err)
	}
	if err := d.Delete(context.Background(), "deleted"); err != nil {
		t.Fatal(err)
	}

	// A new driver on the same state directory (the server restarted)
	// watches the sandboxes it finds running.
	d2, err := New(Config{StateDir: d.cfg.StateDir, SidecarPath: sidecarBin})
	if err != nil {
		t.Fatal(err)
	}
	reports2 := watchLost(t, d2)
	kill("bystander")
	reports2.waitReported(t, "bystander")

	time.Sleep(100 * time.Millisecond) // room for a wrong report to arrive
	if got := reports.got(); slices.Contains(got, "deleted") {
		t.Errorf("a deleted sandbox was reported lost: %v", got)
	}
	if alive, err := d.Probe(context.Background(), "never-made"); err != nil || alive {
		t.Errorf("Probe of an unknown sandbox = %v, %v; want false", alive, err)
	}
}

// TestNoThreadPerSandbox: the driver's process does not keep a thread
// blocked per running sandbox (waiting to reap it): five more sandboxes
// leave its thread count where it was, give or take the runtime's own.
func TestNoThreadPerSandbox(t *testing.T) {
	d := newDriver(t)
	create(t, d, "warm-up") // the runtime's threads for starting jails
	before := threads(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"} {
		create(t, d, id)
	}
	if after := threads(t); after-before >= 8 {
		t.Errorf("threads %d before and %d after eight more sandboxes: one blocked per sandbox?", before, after)
	}
}

// TestOneWatcherPerSandbox: the driver parks one goroutine on each of its
// jails (the reaper, which also reports a loss), not a second one for
// the loss watch (issue 27 item 4: the server's share of an idle
// sandbox). Counted from the goroutines' stacks, so other goroutines of
// the test binary do not count; fails with 2 per sandbox.
func TestOneWatcherPerSandbox(t *testing.T) {
	d := newDriver(t)
	create(t, d, "warm-up")
	before := watchers()
	ids := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
	for _, id := range ids {
		create(t, d, id)
	}
	if got := watchers() - before; got != len(ids) {
		t.Errorf("%d goroutines wait on the exits of %d new sandboxes, want one each", got, len(ids))
	}

	// From prepared slots (the server's default), whose jail spec names
	// the slot, and a loss is still reported under the sandbox's id.
	p, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Prepared: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	reports := watchLost(t, p)
	waitPrepared(t, p, 3)
	before = watchers()
	for _, id := range ids[:3] {
		create(t, p, id)
	}
	if got := watchers() - before; got != 3 {
		t.Errorf("%d goroutines wait on the exits of 3 sandboxes from prepared slots, want one each", got)
	}
	st, err := readState(p.sandboxDir("w2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reports.waitReported(t, "w2")
}

// watchers counts this process's goroutines waiting in onExit.
func watchers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "server/local.onExit") {
			n++
		}
	}
	return n
}

// threads is this process's thread count.
func threads(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/proc", "self", "task"))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
