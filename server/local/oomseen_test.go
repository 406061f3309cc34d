//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/sidecar/jail"
)

// TestMemoryKilledSeen: MemoryKilled reports a kill of the sandbox's
// cgroup once, also to a driver started after it (a restarted server
// adopting the sandbox: the count seen is in the sandbox's directory, not
// in the first driver's memory), and counts a new jail's cgroup (a resume
// after a filesystem pause) from 0. The cgroup is a directory with a v1
// memory.oom_control file the test writes.
func TestMemoryKilledSeen(t *testing.T) {
	d := &Driver{data: t.TempDir()}
	const id = "sb1"
	dir := d.sandboxDir(id)
	cg := t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	jailed := func(pid int) {
		t.Helper()
		if err := writeState(dir, state{PID: pid, StartTime: uint64(pid) * 10, Cgroup: jail.Cgroup{Dirs: []string{cg}}}); err != nil {
			t.Fatal(err)
		}
	}
	kills := func(n int) {
		t.Helper()
		body := fmt.Sprintf("oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", n)
		if err := os.WriteFile(filepath.Join(cg, "memory.oom_control"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(d *Driver, want bool, what string) {
		t.Helper()
		if got, err := d.MemoryKilled(context.Background(), id); err != nil || got != want {
			t.Errorf("%s: MemoryKilled = %v, %v; want %v", what, got, err, want)
		}
	}
	jailed(100)
	kills(0)
	ask(d, false, "no kill")
	kills(1)
	ask(d, true, "the first kill")
	ask(d, false, "the same kill again")
	restarted := &Driver{data: d.data}
	ask(restarted, false, "the same kill, asked by a restarted driver")
	kills(2)
	ask(restarted, true, "a second kill, by the restarted driver")
	jailed(200) // a new jail, a new cgroup counted from 0
	kills(1)
	ask(restarted, true, "the new jail's first kill")
	ask(d, false, "the new jail's first kill again")
}
