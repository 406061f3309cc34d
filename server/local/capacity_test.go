package local

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

// TestAdmitCreate: creates are refused with the resource that is short
// before the host runs out of it, and admitted otherwise.
func TestAdmitCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		host      fakeHost
		limits    HostLimits
		n         int
		want      string // resource refused; "" admits
		wantLimit int64
	}{
		{name: "roomy host", host: roomy, n: 10},
		{name: "one create short of the thread reserve", host: func() fakeHost { h := roomy; h.threads = 29300; return h }(), n: 1},
		{
			name: "threads near pid_max", host: func() fakeHost { h := roomy; h.threads = 29480; return h }(),
			n: 1, want: api.HostThreads, wantLimit: 32768,
		},
		{
			name: "threads-max is the smaller limit", host: func() fakeHost { h := roomy; h.threadsMax = 1000; h.threads = 880; return h }(),
			n: 1, want: api.HostThreads, wantLimit: 1000,
		},
		{
			name: "a burst that would cross the reserve", host: func() fakeHost { h := roomy; h.threads = 29300; return h }(),
			n: 10, want: api.HostThreads, wantLimit: 32768,
		},
		{name: "a configured thread ceiling", host: roomy, limits: HostLimits{MaxThreads: 550}, n: 1, want: api.HostThreads, wantLimit: 550},
		{
			name: "memory nearly gone", host: func() fakeHost { h := roomy; h.memAvailKiB = 600 << 10; return h }(),
			n: 1, want: api.HostMemory,
		},
		{name: "a configured memory floor", host: roomy, limits: HostLimits{MinFreeMemory: 21 << 30}, n: 1, want: api.HostMemory},
		{name: "disk below the watermark", host: roomy, limits: HostLimits{MinFreeDisk: 1 << 62}, n: 1, want: api.HostDiskResource},
		{name: "watermark off", host: roomy, limits: HostLimits{MinFreeDisk: -1}, n: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.limits.ProcRoot = tt.host.write(t)
			d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: tt.limits})
			if err != nil {
				t.Fatal(err)
			}
			err = d.AdmitCreate(context.Background(), tt.n)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("AdmitCreate(%d) = %v, want nil", tt.n, err)
				}
				return
			}
			he, ok := errors.AsType[*model.HostLimitError](err)
			if !ok || he.Resource != tt.want || he.Hint == "" {
				t.Fatalf("AdmitCreate(%d) = %v, want a refusal for %s with a hint", tt.n, err, tt.want)
			}
			if tt.wantLimit != 0 && he.Limit != tt.wantLimit {
				t.Errorf("limit %d, want %d", he.Limit, tt.wantLimit)
			}
			if tt.n > 1 {
				return // Capacity tells about the next single create
			}
			status, err := d.Capacity(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			refusing := status.Disk.Refusing && tt.want == api.HostDiskResource
			for _, l := range status.Limits {
				refusing = refusing || (l.Resource == tt.want && l.Refusing)
			}
			if !refusing {
				t.Errorf("Capacity does not show %s refusing: %+v %+v", tt.want, status.Disk, status.Limits)
			}
		})
	}
}

// TestAdmitWrite: uploads are refused below the watermark only.
func TestAdmitWrite(t *testing.T) {
	t.Parallel()
	root := roomy.write(t)
	for _, tt := range []struct {
		watermark int64
		refused   bool
	}{{1 << 62, true}, {-1, false}, {4096, false}} {
		d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: root, MinFreeDisk: tt.watermark}})
		if err != nil {
			t.Fatal(err)
		}
		err = d.AdmitWrite(context.Background(), "")
		he, ok := errors.AsType[*model.HostLimitError](err)
		if tt.refused != (err != nil) || (tt.refused && (!ok || he.Resource != api.HostDiskResource || he.Free <= 0)) {
			t.Errorf("watermark %d: AdmitWrite = %v, want refused %v", tt.watermark, err, tt.refused)
		}
	}
}

// TestAdmitWriteReadsDiskOnly: a write's admission reads the disk's free
// space alone, not the rest of the host (threads, memory, loop devices,
// the sandboxes' cgroups), which an upload has no use for: on a host
// whose /proc cannot be read it is still admitted, and refused below the
// watermark.
func TestAdmitWriteReadsDiskOnly(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		watermark int64
		refused   bool
	}{{1 << 62, true}, {4096, false}} {
		d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: t.TempDir(), MinFreeDisk: tt.watermark}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.readHost(context.Background()); err == nil {
			t.Fatal("a host reading of an empty /proc succeeded; the test needs one that fails")
		}
		err = d.AdmitWrite(context.Background(), "")
		if _, ok := errors.AsType[*model.HostLimitError](err); tt.refused != ok || (!tt.refused && err != nil) {
			t.Errorf("watermark %d: AdmitWrite = %v, want refused %v", tt.watermark, err, tt.refused)
		}
	}
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

// TestReadHostInBackground: past capacityTTL, a reading's costly parts
// (here the loop devices in use) still serve while they are read again
// in the background, so a create does not wait for them, but its cheap
// parts (here the host's tasks) are read afresh; past capacityMaxAge the
// caller waits for a whole new reading.
func TestReadHostInBackground(t *testing.T) {
	t.Parallel()
	roomyLoops := roomy
	roomyLoops.maxPart = 1 << 14 // 32 loop devices, 16 of them for sandboxes
	loopsFull, tasksFull := roomyLoops, roomyLoops
	loopsFull.loopsInUse = 16
	tasksFull.threads = 29480 // past the reserve of pid_max 32768
	root, loopsRoot, tasksRoot := roomyLoops.write(t), loopsFull.write(t), tasksFull.write(t)
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: root}})
	if err != nil {
		t.Fatal(err)
	}
	if d.storage != StorageLoop {
		t.Fatalf("storage %v, want loop disks (tests run as root)", d.storage)
	}
	ctx := context.Background()
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatalf("AdmitCreate on a roomy host: %v", err)
	}
	age := func(by time.Duration) {
		d.capacity.mu.Lock()
		d.capacity.reading.at = d.capacity.reading.at.Add(-by)
		d.capacity.mu.Unlock()
	}
	refused := func(err error, resource string) bool {
		he, ok := errors.AsType[*model.HostLimitError](err)
		return ok && he.Resource == resource
	}

	// The host's tasks are read afresh even when the reading serves.
	d.cfg.Host.ProcRoot = tasksRoot
	age(capacityTTL)
	if err := d.AdmitCreate(ctx, 1); !refused(err, api.HostThreads) {
		t.Fatalf("AdmitCreate with the host's tasks past the reserve = %v, want refused at once", err)
	}
	waitRefreshed := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			d.capacity.mu.Lock()
			done := !d.capacity.refreshing
			d.capacity.mu.Unlock()
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
	d.cfg.Host.ProcRoot = loopsRoot
	d.noteCreated()
	age(capacityTTL)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Fatalf("AdmitCreate with a stale reading = %v, want it served while a new one is taken", err)
	}
	waitRefreshed()
	if err := d.AdmitCreate(ctx, 1); !refused(err, api.HostLoopDevices) {
		t.Fatalf("AdmitCreate after the background reading = %v, want refused for loop devices", err)
	}
	d.capacity.mu.Lock()
	created := d.capacity.created
	d.capacity.mu.Unlock()
	if created != 0 {
		t.Errorf("creates counted since the new reading: %d, want 0 (the one before it is in it)", created)
	}

	// Too old to serve: the caller waits for a new reading.
	d.cfg.Host.ProcRoot = root
	age(capacityMaxAge)
	if err := d.AdmitCreate(ctx, 1); err != nil {
		t.Errorf("AdmitCreate after capacityMaxAge on a roomy host = %v, want a new reading, admitted", err)
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
