//go:build linux

package hostcap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// fakeHost writes the /proc and /sys files the capacity accounting reads
// under a temporary root.
type fakeHost struct {
	threads, pidMax, threadsMax int64
	memTotalKiB, memAvailKiB    int64
	loopsInUse                  int
	maxPart                     int
}

func (h fakeHost) write(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/loadavg":                        "0.50 0.40 0.30 2/" + strconv.FormatInt(h.threads, 10) + " 4242\n",
		"proc/sys/kernel/pid_max":             strconv.FormatInt(h.pidMax, 10) + "\n",
		"proc/sys/kernel/threads-max":         strconv.FormatInt(h.threadsMax, 10) + "\n",
		"proc/meminfo":                        "MemTotal:       " + strconv.FormatInt(h.memTotalKiB, 10) + " kB\nMemFree:  1 kB\nMemAvailable:   " + strconv.FormatInt(h.memAvailKiB, 10) + " kB\n",
		"sys/module/loop/parameters/max_part": strconv.Itoa(h.maxPart) + "\n",
		"dev/loop-control":                    "",
	}
	// /proc/partitions lists a loop device only while it is bound (has a
	// size), not its unbound neighbours; partitions of a loop device and
	// other disks are not loop devices in use.
	partitions := "major minor  #blocks  name\n\n 253        0   52428800 vda\n"
	for i := range h.loopsInUse + 2 {
		dev := "sys/block/loop" + strconv.Itoa(i)
		files[dev+"/size"] = "0\n"
		if i < h.loopsInUse {
			partitions += fmt.Sprintf("   7 %8d    1048576 loop%d\n", i, i)
		}
	}
	if h.loopsInUse > 0 {
		partitions += "   7        1      10240 loop0p1\n"
	}
	files["proc/partitions"] = partitions
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// roomy is a host far from every limit.
var roomy = fakeHost{
	threads: 500, pidMax: 32768, threadsMax: 190000,
	memTotalKiB: 24 << 20, memAvailKiB: 20 << 20, loopsInUse: 3,
}

// fakeSource is a driver with loop-device disks, no clone pool and no
// cgroups.
type fakeSource struct{}

func (fakeSource) Loop() bool           { return true }
func (fakeSource) ClonePool() ClonePool { return nil }
func (fakeSource) SandboxTasks(context.Context) (tasks, sandboxes int64, ok bool) {
	return 0, 0, false
}

// newHost is an account of a host whose state directory is a scratch
// one, under limits.
func newHost(t *testing.T, limits Limits) *Host {
	t.Helper()
	h := New(t.TempDir(), limits, fakeSource{})
	t.Cleanup(h.Stop)
	return h
}

// TestReadLoops: loop devices in use, and the kernel's limit as max_part
// lowers it.
func TestReadLoops(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		inUse, maxPart int
		wantLimit      int64
	}{{3, 0, 1 << 20}, {0, 15, 1 << 16}, {5, 31, 1 << 15}} {
		h := roomy
		h.loopsInUse, h.maxPart = tt.inUse, tt.maxPart
		used, limit := readLoops(h.write(t))
		if used != int64(tt.inUse) || limit != tt.wantLimit {
			t.Errorf("in use %d, max_part %d: readLoops = %d, %d; want %d, %d", tt.inUse, tt.maxPart, used, limit, tt.inUse, tt.wantLimit)
		}
	}
	if used, limit := readLoops(t.TempDir()); used != 0 || limit != 0 {
		t.Errorf("a host without loop devices: %d, %d", used, limit)
	}
}

// TestReadHostInBackground: past TTL, a reading's costly parts
// (here the loop devices in use) still serve while they are read again
// in the background, so a create does not wait for them, but its cheap
// parts (here the host's tasks) are read afresh; past MaxAge the
// caller waits for a whole new reading.
func TestReadHostInBackground(t *testing.T) {
	t.Parallel()
	roomyLoops := roomy
	roomyLoops.maxPart = 1 << 14 // 32 loop devices, 16 of them for sandboxes
	loopsFull, tasksFull := roomyLoops, roomyLoops
	loopsFull.loopsInUse = 16
	tasksFull.threads = 29480 // past the reserve of pid_max 32768
	root, loopsRoot, tasksRoot := roomyLoops.write(t), loopsFull.write(t), tasksFull.write(t)
	d := newHost(t, Limits{ProcRoot: root})
	// The readings here are the callers' (the host changes under the
	// driver between them): none kept in the background.
	d.keepFor = 0
	ctx := context.Background()
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatalf("AdmitCreate on a roomy host: %v", err)
	}
	age := func(by time.Duration) {
		d.mu.Lock()
		d.reading.At = d.reading.At.Add(-by)
		d.mu.Unlock()
	}
	refused := func(err error, resource string) bool {
		he, ok := errors.AsType[*model.HostLimitError](err)
		return ok && he.Resource == resource
	}

	// The host's tasks are read afresh even when the reading serves.
	d.limits.ProcRoot = tasksRoot
	age(TTL)
	if err := d.AdmitCreate(ctx, 1); !refused(err, api.HostThreads) {
		t.Fatalf("AdmitCreate with the host's tasks past the reserve = %v, want refused at once", err)
	}
	waitRefreshed := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			d.mu.Lock()
			done := !d.refreshing
			d.mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the background reading never ended")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRefreshed()

	// The loop devices fill up: a stale reading still admits while the
	// next is taken, which then refuses.
	d.limits.ProcRoot = loopsRoot
	d.NoteCreated()
	age(TTL)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatalf("AdmitCreate with a stale reading = %v, want it served while a new one is taken", err)
	}
	waitRefreshed()
	if err := d.AdmitCreate(ctx, 1); !refused(err, api.HostLoopDevices) {
		t.Fatalf("AdmitCreate after the background reading = %v, want refused for loop devices", err)
	}
	d.mu.Lock()
	created := d.created
	d.mu.Unlock()
	if created != 0 {
		t.Errorf("creates counted since the new reading: %d, want 0 (the one before it is in it)", created)
	}

	// Too old to serve: the caller waits for a new reading.
	d.limits.ProcRoot = root
	age(MaxAge)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Errorf("AdmitCreate after MaxAge on a roomy host = %v, want a new reading, admitted", err)
	}
}

// TestReadCheapSkipsLimits: the part of a reading taken afresh for each
// create past TTL reads the host's uses (free disk, tasks,
// memory), not its task limit, which the whole reading holds: on a host
// whose pid_max and threads-max cannot be read, it still succeeds, and
// the whole reading fails.
func TestReadCheapSkipsLimits(t *testing.T) {
	t.Parallel()
	root := roomy.write(t)
	for _, f := range []string{"proc/sys/kernel/pid_max", "proc/sys/kernel/threads-max"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	d := newHost(t, Limits{ProcRoot: root})
	r := Reading{MaxThreads: 32768}
	if err := d.readCheap(&r); err != nil {
		t.Fatalf("readCheap without the task limit's files: %v", err)
	}
	if r.Threads != roomy.threads || r.MemAvail != roomy.memAvailKiB<<10 || r.MaxThreads != 32768 {
		t.Errorf("readCheap = %d tasks, %d available, limit %d; want %d, %d, the reading's 32768", r.Threads, r.MemAvail, r.MaxThreads, roomy.threads, roomy.memAvailKiB<<10)
	}
	if _, err := d.takeReading(context.Background()); err == nil {
		t.Error("a whole reading without the task limit's files succeeded")
	}
}

// BenchmarkReadLoops is the loop count of one host reading on this host
// (as many loop devices as it has made: one per sandbox disk and volume it
// ever held at once).
func BenchmarkReadLoops(b *testing.B) {
	devs, _ := filepath.Glob("/sys/block/loop*")
	var used int64
	for b.Loop() {
		used, _ = readLoops("/")
	}
	b.ReportMetric(float64(used), "in-use")
	b.ReportMetric(float64(len(devs)), "devices")
}
