package jail

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cgroupHost is a fake /proc/self view of a host's cgroups.
type cgroupHost struct {
	mountinfo, cgroup string
	files             map[string]string // extra files (relative to the root) and their contents
}

var (
	// hybrid is this CI machine: v1 controllers, memory nested under a
	// supervisor's cgroup, and a controller-less cgroup2 at unified.
	hybrid = cgroupHost{
		mountinfo: `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`,
		cgroup: "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/f0c1\n2:cpuacct:/\n1:cpu:/\n0::/\n",
		files:  map[string]string{"sys/fs/cgroup/unified/cgroup.controllers": "hugetlb\n"},
	}
	// unified is a systemd host with cgroup v2 only; the server is a unit.
	unified = cgroupHost{
		mountinfo: "25 20 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
		cgroup:    "0::/system.slice/boxkite.service\n",
		files: map[string]string{
			"sys/fs/cgroup/system.slice/boxkite.service/cgroup.controllers": "cpuset cpu io memory pids\n",
		},
	}
	// combined mounts cpu and cpuacct together and runs in a cgroup
	// namespace whose root is not the hierarchy's.
	combined = cgroupHost{
		mountinfo: `31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
34 30 0:31 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
35 30 0:32 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
`,
		cgroup: "3:cpu,cpuacct:/docker/abc\n2:memory:/docker/abc/x\n1:pids:/other\n",
	}
)

func (h cgroupHost) build(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{"proc/self/mountinfo": h.mountinfo, "proc/self/cgroup": h.cgroup}
	for k, v := range h.files {
		files[k] = v
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetectCgroups(t *testing.T) {
	tests := []struct {
		name        string
		host        cgroupHost
		wantVersion string
		wantDirs    []string // of Cgroups, relative to the root
	}{
		{"hybrid", hybrid, "v1 (memory,pids,cpu) +cgroup.kill", []string{
			"sys/fs/cgroup/cpu", "sys/fs/cgroup/memory/process_api/f0c1", "sys/fs/cgroup/pids", "sys/fs/cgroup/unified",
		}},
		{"unified", unified, "v2", []string{"sys/fs/cgroup/system.slice/boxkite.service"}},
		// pids: our cgroup lies outside what the namespace shows.
		{"combined", combined, "v1 (memory,cpu)", []string{"sys/fs/cgroup/cpu,cpuacct/docker/abc", "sys/fs/cgroup/memory/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.host.build(t)
			c, err := DetectCgroups(root)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Version(); got != tt.wantVersion {
				t.Errorf("Version() = %q, want %q", got, tt.wantVersion)
			}
			var dirs []string
			for _, d := range append([]string{c.v2, c.killDir}, mapValues(c.v1)...) {
				if d != "" {
					rel, _ := filepath.Rel(root, d)
					dirs = append(dirs, rel)
				}
			}
			slices.Sort(dirs)
			if diff := cmp.Diff(tt.wantDirs, slices.Compact(dirs)); diff != "" {
				t.Errorf("dirs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		root := cgroupHost{mountinfo: "1 0 8:1 / / rw - ext4 /dev/sda rw\n", cgroup: "0::/\n"}.build(t)
		if _, err := DetectCgroups(root); err == nil {
			t.Error("DetectCgroups without cgroup mounts succeeded")
		}
	})
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCgroupLimitsWritten checks what Create writes where, on fake trees
// whose interface files exist beforehand (a real cgroupfs makes them).
func TestCgroupLimitsWritten(t *testing.T) {
	lim := Limits{CPUs: 1.5, Memory: 1 << 30, Pids: 512}
	tests := []struct {
		name  string
		host  cgroupHost
		files map[string]string // relative to the root → content wanted after Create
	}{
		{"v1", hybrid, map[string]string{
			"sys/fs/cgroup/memory/process_api/f0c1/boxkite/sb.1/memory.limit_in_bytes":       "1073741824",
			"sys/fs/cgroup/memory/process_api/f0c1/boxkite/sb.1/memory.memsw.limit_in_bytes": "1073741824",
			"sys/fs/cgroup/pids/boxkite/sb.1/pids.max":                                       "512",
			"sys/fs/cgroup/cpu/boxkite/sb.1/cpu.cfs_period_us":                               "100000",
			"sys/fs/cgroup/cpu/boxkite/sb.1/cpu.cfs_quota_us":                                "150000",
			"sys/fs/cgroup/memory/process_api/f0c1/boxkite/sb.1/cgroup.procs":                "",
			"sys/fs/cgroup/pids/boxkite/sb.1/cgroup.procs":                                   "",
			"sys/fs/cgroup/cpu/boxkite/sb.1/cgroup.procs":                                    "",
			"sys/fs/cgroup/unified/boxkite/sb.1/cgroup.procs":                                "",
		}},
		{"v2", unified, map[string]string{
			"sys/fs/cgroup/system.slice/boxkite.service/cgroup.subtree_control":         "+memory +pids +cpu",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/cgroup.subtree_control": "+memory +pids +cpu",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb.1/memory.max":        "1073741824",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb.1/memory.swap.max":   "0",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb.1/pids.max":          "512",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb.1/cpu.max":           "150000 100000",
			"sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb.1/cgroup.procs":      "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			host.files = map[string]string{}
			for k, v := range tt.host.files {
				host.files[k] = v
			}
			for k := range tt.files {
				host.files[k] = "" // the kernel's interface files
			}
			root := host.build(t)
			c, err := DetectCgroups(root)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Prepare(); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			cg, err := c.Create("sb.1", lim)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			for name, want := range tt.files {
				b, err := os.ReadFile(filepath.Join(root, name))
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != want {
					t.Errorf("%s = %q, want %q", name, b, want)
				}
			}
			if len(cg.Dirs) == 0 {
				t.Fatal("Create returned no directories")
			}
			for _, d := range cg.Dirs {
				if filepath.Base(d) != "sb.1" {
					t.Errorf("cgroup dir %s is not named sb.1", d)
				}
			}
		})
	}
	t.Run("bad names", func(t *testing.T) {
		c, err := DetectCgroups(hybrid.build(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"", ".", "..", "a/b"} {
			if _, err := c.Create(name, lim); err == nil {
				t.Errorf("Create(%q) succeeded", name)
			}
		}
	})
	t.Run("refuses to remove foreign dirs", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), cgroupParent)
		if err := os.MkdirAll(filepath.Join(parent, "sb"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The parent and the directory above it survive: .. and . below
		// boxkite name them, not a sandbox.
		for _, dir := range []string{filepath.Dir(parent), parent + "/..", parent + "/.", parent + "/sb/.."} {
			cg := Cgroup{Dirs: []string{dir}}
			if err := cg.Remove(context.Background()); err == nil || !strings.Contains(err.Error(), "not a boxkite cgroup") {
				t.Errorf("Remove(%s) = %v, want not a boxkite cgroup", dir, err)
			}
		}
		if _, err := os.Stat(filepath.Join(parent, "sb")); err != nil {
			t.Errorf("a refused Remove removed something: %v", err)
		}
	})
}

func TestIsSandboxCgroup(t *testing.T) {
	tests := []struct {
		dir  string
		want bool
	}{
		{"/sys/fs/cgroup/system.slice/boxkite.service/boxkite/sb-1", true},
		{"/sys/fs/cgroup/memory/boxkite/sb-1", true},
		{"/boxkite/sb", true},
		{"/sys/fs/cgroup/boxkite/boxkite", true}, // a sandbox named boxkite
		{"/sys/fs/cgroup/boxkite", false},        // the parent itself
		{"/sys/fs/cgroup/boxkite/..", false},     // filepath.Dir gives .../boxkite
		{"/sys/fs/cgroup/boxkite/.", false},
		{"/sys/fs/cgroup/boxkite/sb/..", false},
		{"/sys/fs/cgroup/boxkite/sb/", false},
		{"/sys/fs/cgroup/boxkite//sb", false},
		{"/sys/fs/cgroup/x/../boxkite/sb", false}, // unclean, though it cleans to one
		{"boxkite/sb", false},                     // relative
		{"./boxkite/sb", false},
		{"/sys/fs/cgroup/boxkite/sb/child", false},
		{"/sys/fs/cgroup/boxkite-server", false},
		{"/sys/fs/cgroup/boxkitex/sb", false},
		{"/", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isSandboxCgroup(tt.dir); got != tt.want {
			t.Errorf("isSandboxCgroup(%q) = %v, want %v", tt.dir, got, tt.want)
		}
	}
}

// FuzzIsSandboxCgroup checks isSandboxCgroup against a reading of the path
// element by element: absolute, no empty, . or .. element, and boxkite
// the element before the last.
func FuzzIsSandboxCgroup(f *testing.F) {
	for _, seed := range []string{
		"/sys/fs/cgroup/boxkite/sb", "/sys/fs/cgroup/boxkite/..", "/sys/fs/cgroup/boxkite/.", "/boxkite/sb/..",
		"boxkite/sb", "/a//boxkite/sb", "/boxkite/sb/", "/", "", "/boxkite/\x00", "/../boxkite/sb",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, dir string) {
		want := false
		if rest, ok := strings.CutPrefix(dir, "/"); ok {
			elems := strings.Split(rest, "/")
			want = len(elems) >= 2 && elems[len(elems)-2] == cgroupParent
			for _, e := range elems {
				want = want && e != "" && e != "." && e != ".."
			}
		}
		if got := isSandboxCgroup(dir); got != want {
			t.Fatalf("isSandboxCgroup(%q) = %v, want %v", dir, got, want)
		}
	})
}

// TestCgroupReal makes a sandbox cgroup on this host's real cgroups (CI
// runs as root), puts a process in it and removes it again.
// realCgroups is this host's cgroups, prepared; the test is skipped
// unless root.
func realCgroups(t testing.TB) *Cgroups {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	c, err := DetectCgroups("/")
	if err == nil {
		err = c.Prepare()
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCgroupReal(t *testing.T) {
	c := realCgroups(t)
	cg, err := c.Create("jailtest."+strings.ReplaceAll(t.Name(), "/", "_"), Limits{CPUs: 0.5, Memory: 64 << 20, Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Remove(context.Background()) })
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cg.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	procs, err := cg.Procs()
	if err != nil || !slices.Equal(procs, []int{cmd.Process.Pid}) {
		t.Errorf("Procs() = %v, %v; want [%d]", procs, err, cmd.Process.Pid)
	}
	if err := cg.Remove(context.Background()); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("process in a removed cgroup: Wait = %v, want killed", err)
	}
	for _, d := range cg.Dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still exists after Remove (%v)", d, err)
		}
	}
}

// TestCgroupFreezeReal freezes a spinning process through this host's
// freezer (cgroup v2's cgroup.freeze or the v1 freezer), checks that its
// CPU time stops, thaws it, and removes the cgroup while frozen.
func TestCgroupFreezeReal(t *testing.T) {
	c := realCgroups(t)
	cg, err := c.Create("jailtest."+strings.ReplaceAll(t.Name(), "/", "_"), Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Remove(context.Background()) })
	if !cg.CanFreeze() {
		t.Fatalf("no freezer in %v", cg.Dirs)
	}
	// Freeze prefers cgroup2's cgroup.freeze; on a hybrid host, test the
	// v1 freezer too, alone.
	var v1 Cgroup
	for _, d := range cg.Dirs {
		if _, err := os.Stat(filepath.Join(d, "freezer.state")); err == nil {
			v1.Dirs = append(v1.Dirs, d)
		}
	}
	for _, c := range []Cgroup{cg, v1} {
		if len(c.Dirs) > 0 {
			testFreeze(t, cg, c)
		}
	}
}

// testFreeze spins a process in cg and freezes it with fc, a part of cg.
func testFreeze(t *testing.T, cg, fc Cgroup) {
	t.Helper()
	t.Logf("freezing with %v", fc.Dirs)
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cg.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := fc.Freeze(true); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if !fc.Frozen() {
		t.Error("Frozen() = false after Freeze(true)")
	}
	before := cpuTicks(t, cmd.Process.Pid)
	time.Sleep(300 * time.Millisecond)
	if after := cpuTicks(t, cmd.Process.Pid); after != before {
		t.Errorf("CPU time of a frozen process grew from %d to %d ticks", before, after)
	}
	if err := fc.Freeze(false); err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if fc.Frozen() {
		t.Error("Frozen() = true after Freeze(false)")
	}
	deadline := time.Now().Add(30 * time.Second)
	for cpuTicks(t, cmd.Process.Pid) == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if cpuTicks(t, cmd.Process.Pid) == before {
		t.Error("a thawed process did not run again")
	}
	if err := fc.Freeze(true); err != nil {
		t.Fatal(err)
	}
	// Removing a frozen cgroup kills its processes; make it again after.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cg.Remove(ctx); err != nil {
		t.Fatalf("Remove of a frozen cgroup: %v", err)
	}
	_ = cmd.Wait()
	for _, d := range cg.Dirs {
		if err := mkdirCgroup(d); err != nil {
			t.Fatal(err)
		}
	}
}

// cpuTicks returns the user plus system CPU time of pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// BenchmarkCgroupRemoveEmpty is the removal of a sandbox's cgroup after
// its jail is gone, as the local driver's Delete does it (issue 27): the
// cgroup is made (untimed) and removed empty in this host's hierarchies.
func BenchmarkCgroupRemoveEmpty(b *testing.B) {
	c := realCgroups(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		cg, err := c.Create("jailbench."+strconv.Itoa(os.Getpid()), Limits{Memory: 64 << 20, Pids: 8})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := cg.Remove(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
