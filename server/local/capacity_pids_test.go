//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// oldSandboxTasks is sandboxTasks as it was before its cache of pids
// files: every state file read and decoded, then Cgroup.Pids, at every
// reading. The cached reading must count what it counts.
func oldSandboxTasks(d *Driver) (tasks, sandboxes int64) {
	for _, parent := range []string{d.sandboxesDir(), d.poolDir()} {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			st, err := readState(filepath.Join(parent, e.Name()))
			if err != nil || len(st.Cgroup.Dirs) == 0 {
				continue
			}
			if n, err := st.Cgroup.Pids(); err == nil {
				tasks += n
				sandboxes++
			}
		}
	}
	return tasks, sandboxes
}

// fakeCgroups makes sandbox cgroups as plain files under a temporary
// root: one directory per hierarchy, pids.current in the one that
// carries the pids controller.
type fakeCgroups struct {
	t     *testing.T
	root  string
	hiers []string // hierarchies, in the order of a Cgroup's Dirs
	pids  string   // the hierarchy with pids.current
}

func (f fakeCgroups) make(name string, tasks int) jail.Cgroup {
	f.t.Helper()
	var cg jail.Cgroup
	for _, h := range f.hiers {
		dir := filepath.Join(f.root, h, "boxkite", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.t.Fatal(err)
		}
		files := map[string]string{"cgroup.procs": ""}
		switch h {
		case "memory":
			files["memory.usage_in_bytes"] = "4096\n"
		case "freezer":
			files["freezer.state"] = "THAWED\n"
		}
		for file, content := range files {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				f.t.Fatal(err)
			}
		}
		cg.Dirs = append(cg.Dirs, dir)
	}
	f.setTasks(name, tasks)
	return cg
}

func (f fakeCgroups) setTasks(name string, tasks int) {
	f.t.Helper()
	p := filepath.Join(f.root, f.pids, "boxkite", name, "pids.current")
	if err := os.WriteFile(p, []byte(strconv.Itoa(tasks)+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f fakeCgroups) remove(name string) {
	f.t.Helper()
	for _, h := range f.hiers {
		if err := os.RemoveAll(filepath.Join(f.root, h, "boxkite", name)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestSandboxTasksCached: the reading that caches each sandbox's
// pids.current counts what reading every state file counted
// (oldSandboxTasks), through the events of sandboxes' lives, on a cgroup
// v1 (hybrid) and a v2 layout: running and frozen sandboxes and pool
// members count, a member not started yet does not; one paused with
// filesystem (its cgroup removed, its state naming none) does not, and
// counts again once restarted; one that ends (its cgroup removed first,
// its directory after) is no longer counted; a claimed pool member (its
// directory renamed) counts once; one whose state comes to name another
// cgroup is read there. A driver started afresh on the state directory
// (adopting them after a restart, nothing cached) reads the same at every step. And the
// cache is what a reading reads: after the first, a state file that no
// longer decodes does not stop its sandbox counting.
func TestSandboxTasksCached(t *testing.T) {
	t.Parallel()
	layouts := []struct {
		name  string
		hiers []string
		pids  string
	}{
		{"v1", []string{"memory", "pids", "cpu", "freezer", "unified"}, "pids"},
		{"v2", []string{"unified"}, "unified"},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			cgs := fakeCgroups{t: t, root: t.TempDir(), hiers: l.hiers, pids: l.pids}
			stateDir := t.TempDir()
			d, err := New(Config{StateDir: stateDir, SidecarPath: sidecarBin, Host: HostLimits{ProcRoot: roomy.write(t)}})
			if err != nil {
				t.Fatal(err)
			}
			// A restarted driver adopts the sandboxes with nothing cached
			// (New itself would also clear the warm pool).
			restarted := func() *Driver { return &Driver{data: d.data} }
			put := func(dir string, st state) {
				t.Helper()
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := writeState(dir, st); err != nil {
					t.Fatal(err)
				}
			}
			check := func(step string, wantTasks, wantSandboxes int64) {
				t.Helper()
				if tasks, n := d.sandboxTasks(context.Background()); tasks != wantTasks || n != wantSandboxes {
					t.Errorf("%s: sandboxTasks = %d tasks in %d sandboxes, want %d in %d", step, tasks, n, wantTasks, wantSandboxes)
				}
				if tasks, n := oldSandboxTasks(d); tasks != wantTasks || n != wantSandboxes {
					t.Errorf("%s: the state files' reading = %d tasks in %d sandboxes, want %d in %d", step, tasks, n, wantTasks, wantSandboxes)
				}
				if tasks, n := restarted().sandboxTasks(context.Background()); tasks != wantTasks || n != wantSandboxes {
					t.Errorf("%s: a restarted driver's sandboxTasks = %d tasks in %d sandboxes, want %d in %d", step, tasks, n, wantTasks, wantSandboxes)
				}
				if cached := int64(d.capacity.pids.Cached()); cached != wantSandboxes {
					t.Errorf("%s: %d pids files cached, want one per counted sandbox (%d)", step, cached, wantSandboxes)
				}
			}
			sb := func(id string) string { return filepath.Join(d.sandboxesDir(), id) }

			put(sb("a"), state{PID: 1, Cgroup: cgs.make("a", 3)})
			b := state{PID: 2, Cgroup: cgs.make("b", 2), Paused: api.PauseFreeze}
			put(sb("b"), b)
			put(sb("c"), state{Paused: api.PauseFilesystem})
			put(filepath.Join(d.poolDir(), "warm-d"), state{PID: 4, Cgroup: cgs.make("warm-d", 4)})
			if err := os.MkdirAll(filepath.Join(d.poolDir(), "prep-e"), 0o700); err != nil { // no state file yet
				t.Fatal(err)
			}
			check("start", 9, 3)

			cgs.setTasks("a", 7)
			check("a's tasks change", 13, 3)

			cgs.remove("a")
			check("a's cgroup removed", 6, 2)
			if err := os.RemoveAll(sb("a")); err != nil {
				t.Fatal(err)
			}
			check("a's directory removed", 6, 2)

			put(sb("c"), state{PID: 3, Cgroup: cgs.make("c", 5)})
			check("c restarted", 11, 3)

			if err := os.Rename(filepath.Join(d.poolDir(), "warm-d"), sb("f")); err != nil {
				t.Fatal(err)
			}
			check("warm-d claimed as f", 11, 3)

			cgs.remove("b")
			b.Cgroup = cgs.make("b-again", 1)
			put(sb("b"), b)
			check("b in another cgroup", 10, 3)

			if err := os.WriteFile(filepath.Join(sb("f"), stateFile), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
			if tasks, n := d.sandboxTasks(context.Background()); tasks != 10 || n != 3 {
				t.Errorf("after f's state file broke, sandboxTasks = %d tasks in %d sandboxes; want %d in %d, f read from its cached pids file", tasks, n, 10, 3)
			}
		})
	}
}

// BenchmarkSandboxTasks is the sandboxes' part of a host reading with
// n sandboxes on a cgroup v1 (hybrid) layout of plain files: the state
// files' reading as it was (old) and the cached one (new).
func BenchmarkSandboxTasks(b *testing.B) {
	for _, n := range []int{100, 2000} {
		d, err := New(Config{StateDir: b.TempDir(), SidecarPath: sidecarBin})
		if err != nil {
			b.Fatal(err)
		}
		t := &testing.T{}
		cgs := fakeCgroups{t: t, root: b.TempDir(), hiers: []string{"memory", "pids", "cpu", "freezer", "unified"}, pids: "pids"}
		for i := range n {
			id := fmt.Sprintf("sb%016x", i)
			dir := filepath.Join(d.sandboxesDir(), id)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			if err := writeState(dir, state{PID: i + 1, Token: "0123456789abcdef0123456789abcdef", Cgroup: cgs.make(id, 4)}); err != nil {
				b.Fatal(err)
			}
		}
		for _, v := range []struct {
			name string
			read func() (int64, int64)
		}{
			{"old", func() (int64, int64) { return oldSandboxTasks(d) }},
			{"new", func() (int64, int64) { return d.sandboxTasks(context.Background()) }},
		} {
			b.Run(fmt.Sprintf("%s/sandboxes=%d", v.name, n), func(b *testing.B) {
				for b.Loop() {
					if tasks, got := v.read(); tasks != int64(4*n) || got != int64(n) {
						b.Fatalf("%d tasks in %d sandboxes, want %d in %d", tasks, got, 4*n, n)
					}
				}
			})
		}
	}
}
