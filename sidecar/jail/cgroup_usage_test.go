package jail

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCgroupSetLimitsAndUsage re-limits a real sandbox cgroup holding a
// process, up and down (v1's memsw must follow the memory limit in the
// right order), and reads its usage.
func TestCgroupSetLimitsAndUsage(t *testing.T) {
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
	cg, err := c.Create("jailtest."+t.Name(), Limits{CPUs: 1, Memory: 64 << 20, Pids: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Remove(context.Background()) })
	// The sleep starts only once the shell is in the cgroup: on cgroup
	// v1, memory charged before a move stays where it was.
	cmd := exec.Command("sh", "-c", "read _; exec sleep 60")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := cg.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	for _, lim := range []Limits{
		{CPUs: 2, Memory: 256 << 20, Pids: 64}, // grow
		{CPUs: 0.5, Memory: 32 << 20, Pids: 8}, // shrink
		{},                                     // no limits
	} {
		if err := cg.SetLimits(lim); err != nil {
			t.Fatalf("SetLimits(%+v): %v", lim, err)
		}
		checkLimits(t, cg, lim)
	}
	var u Usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if u, err = cg.Usage(); err != nil {
			t.Fatal(err)
		}
		if u.Memory > 0 && u.MemoryAnon >= 0 && u.MemoryAnon <= u.Memory && u.Pids == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Usage() = %+v, want some memory and 1 task (sleep)", u)
		}
	}
}

// checkLimits reads back the memory and pids limits from whichever files
// the host has.
func checkLimits(t *testing.T, cg Cgroup, lim Limits) {
	t.Helper()
	want := func(n int64, unlimited string) string {
		if n == 0 {
			return unlimited
		}
		return strings.TrimSpace(limitOrMax(n))
	}
	checked := 0
	for _, dir := range cg.Dirs {
		for _, f := range []struct{ name, want string }{
			{"memory.max", want(lim.Memory, "max")},
			{"pids.max", want(lim.Pids, "max")},
			{"memory.limit_in_bytes", want(lim.Memory, "")}, // v1 shows unlimited as a huge number
		} {
			b, err := os.ReadFile(filepath.Join(dir, f.name))
			if err != nil {
				continue
			}
			checked++
			got := strings.TrimSpace(string(b))
			if f.want == "" {
				if len(got) < 15 {
					t.Errorf("%s/%s = %s, want unlimited", dir, f.name, got)
				}
				continue
			}
			if got != f.want {
				t.Errorf("%s/%s = %s, want %s", dir, f.name, got, f.want)
			}
		}
	}
	if checked < 2 {
		t.Errorf("only %d limit files found in %v", checked, cg.Dirs)
	}
}
