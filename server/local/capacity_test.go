//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local/hostcap"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar/jail"
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
		if _, _, err := d.capacity.Read(context.Background()); err == nil {
			t.Fatal("a host reading of an empty /proc succeeded; the test needs one that fails")
		}
		err = d.AdmitWrite(context.Background(), "")
		if _, ok := errors.AsType[*model.HostLimitError](err); tt.refused != ok || (!tt.refused && err != nil) {
			t.Errorf("watermark %d: AdmitWrite = %v, want refused %v", tt.watermark, err, tt.refused)
		}
	}
}

// TestSandboxTasks: the sandboxes' and pool members' tasks are summed
// from pids.current alone: a sandbox whose memory accounting cannot be
// read (here memory.stat is a directory) still counts, one without a
// cgroup or a state file does not.
func TestSandboxTasks(t *testing.T) {
	t.Parallel()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: roomy.write(t)}})
	if err != nil {
		t.Fatal(err)
	}
	cgroups := t.TempDir()
	mkdir := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sandbox := func(dir string, pids string) {
		t.Helper()
		var st state
		if pids != "" {
			name := filepath.Base(dir)
			mem, pid := mkdir(filepath.Join(cgroups, "memory", name)), mkdir(filepath.Join(cgroups, "pids", name))
			mkdir(filepath.Join(mem, "memory.stat"))
			for p, content := range map[string]string{filepath.Join(mem, "memory.usage_in_bytes"): "4096\n", filepath.Join(pid, "pids.current"): pids + "\n"} {
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st.Cgroup.Dirs = []string{mem, pid}
		}
		if err := writeState(mkdir(dir), st); err != nil {
			t.Fatal(err)
		}
	}
	sandbox(filepath.Join(d.sandboxesDir(), "a"), "5")
	sandbox(filepath.Join(d.sandboxesDir(), "b"), "")
	sandbox(filepath.Join(d.poolDir(), "warm-c"), "3")
	mkdir(filepath.Join(d.poolDir(), "prep-d")) // no state file yet
	if tasks, sandboxes := d.sandboxTasks(context.Background()); tasks != 8 || sandboxes != 2 {
		t.Errorf("sandboxTasks = %d tasks in %d sandboxes, want 8 in 2", tasks, sandboxes)
	}
}

// BenchmarkTakeReading is one whole host reading with a pool of 40
// members whose cgroups have a hybrid host's five hierarchies (memory,
// pids, cpu, freezer and the controller-less cgroup2 one), made of plain
// files under a temporary directory. Its system calls per reading are
// counted with strace -c -f -benchtime Nx
// (bench/issue27/session10-warm10.md).
func BenchmarkTakeReading(b *testing.B) {
	d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin})
	if err != nil {
		b.Fatal(err)
	}
	d.cgroups = &jail.Cgroups{}
	cgroups := b.TempDir()
	files := map[string]map[string]string{
		"memory":  {"memory.usage_in_bytes": "1048576\n", "memory.stat": "cache 0\nrss 1048576\n"},
		"pids":    {"pids.current": "4\n"},
		"cpu":     {"cpu.cfs_quota_us": "-1\n"},
		"freezer": {"freezer.state": "THAWED\n"},
		"unified": {"cgroup.procs": ""},
	}
	for i := range 40 {
		name := fmt.Sprintf("warm-%016x", i)
		var st state
		for _, h := range []string{"memory", "pids", "cpu", "freezer", "unified"} {
			dir := filepath.Join(cgroups, h, name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f, content := range files[h] {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			st.Cgroup.Dirs = append(st.Cgroup.Dirs, dir)
		}
		dir := filepath.Join(d.poolDir(), name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := writeState(dir, st); err != nil {
			b.Fatal(err)
		}
	}
	var r *hostcap.Reading
	for b.Loop() {
		if r, err = d.capacity.Take(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	if r.Sandboxes != 40 || r.SandboxThreads != 160 {
		b.Fatalf("reading counts %d tasks in %d sandboxes, want 160 in 40", r.SandboxThreads, r.Sandboxes)
	}
}
