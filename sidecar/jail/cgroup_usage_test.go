package jail

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCgroupSetLimitsAndUsage re-limits a real sandbox cgroup holding a
// process, up and down (v1's memsw must follow the memory limit in the
// right order), and reads its usage.
func TestCgroupSetLimitsAndUsage(t *testing.T) {
	c := realCgroups(t)
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if u, err = cg.Usage(); err != nil {
			t.Fatal(err)
		}
		if u.Memory > 0 && u.MemoryAnon >= 0 && u.MemoryAnon <= u.Memory && u.Pids == 1 && u.CPUMicros > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Usage() = %+v, want some memory, 1 task (sleep) and the CPU time of its exec", u)
		}
	}
	if n, err := cg.Pids(); err != nil || n != 1 {
		t.Errorf("Pids() = %d, %v; want 1 task (sleep)", n, err)
	}
	// The kernel's own file gives its whole count in ReadPids' one read.
	if p, _, err := cg.PidsFile(); err != nil {
		t.Errorf("PidsFile(): %v", err)
	} else if n, err := ReadPids(p); err != nil || n != 1 {
		t.Errorf("ReadPids(%s) = %d, %v; want 1 task (sleep)", p, n, err)
	}
}

// TestCgroupPids: Pids reads pids.current of the first directory that has
// one and nothing else, so a cgroup whose memory files cannot be read
// (here memory.stat is a directory) still reports its tasks; one without
// pids accounting is an error.
func TestCgroupPids(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory/sb/memory.usage_in_bytes", "4096\n")
	if err := os.MkdirAll(filepath.Join(root, "memory/sb/memory.stat"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("pids/sb/pids.current", "7\n")
	write("unified/sb/cgroup.procs", "")
	dirs := func(names ...string) Cgroup {
		var cg Cgroup
		for _, n := range names {
			cg.Dirs = append(cg.Dirs, filepath.Join(root, n, "sb"))
		}
		return cg
	}
	if n, err := dirs("memory", "pids", "unified").Pids(); err != nil || n != 7 {
		t.Errorf("Pids() = %d, %v; want 7", n, err)
	}
	if n, err := dirs("memory", "unified").Pids(); err == nil {
		t.Errorf("Pids() without pids accounting = %d, want an error", n)
	}
	// PidsFile names the file it read, past the memory directory.
	want := filepath.Join(root, "pids/sb/pids.current")
	if p, n, err := dirs("memory", "pids", "unified").PidsFile(); err != nil || p != want || n != 7 {
		t.Errorf("PidsFile() = %s, %d, %v; want %s, 7", p, n, err, want)
	}
	write("pids/sb/pids.current", "12\n")
	if n, err := ReadPids(want); err != nil || n != 12 {
		t.Errorf("ReadPids() = %d, %v; want 12", n, err)
	}
	write("pids/sb/pids.current", strings.Repeat("1", 32))
	if n, err := ReadPids(want); err == nil {
		t.Errorf("ReadPids() of a file longer than a count = %d, want an error", n)
	}
	write("pids/sb/pids.current", "seven\n")
	if _, err := dirs("pids").Pids(); err == nil {
		t.Error("Pids() of an unreadable pids.current: no error")
	}
	if _, err := ReadPids(want); err == nil {
		t.Error("ReadPids() of an unreadable pids.current: no error")
	}
	if err := os.Remove(want); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPids(want); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPids() of a removed cgroup's file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadSmallFile: whole files of every size around its first buffer,
// /proc files (which report no size), and a missing file as
// fs.ErrNotExist.
func TestReadSmallFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, size := range []int{0, 1, 1024, 2047, 2048, 2049, 4096, 70000} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte('a' + i%26)
		}
		p := filepath.Join(dir, strconv.Itoa(size))
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSmallFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadSmallFile of %d bytes = %d bytes, %v", size, len(got), err)
		}
	}
	want, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSmallFile("/proc/self/mountinfo")
	if err != nil || len(got) != len(want) {
		t.Errorf("ReadSmallFile(/proc/self/mountinfo) = %d bytes, %v; os.ReadFile read %d", len(got), err, len(want))
	}
	if _, err := ReadSmallFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSmallFile of a missing file: %v, want fs.ErrNotExist", err)
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
