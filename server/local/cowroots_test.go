//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestSandboxesFoundWhetherPoolMounted: where a sandbox lives does not
// depend on whether this start mounted the clone pool (issue 19). A
// server killed with -9 leaves a running, a frozen and a filesystem-
// paused sandbox; the next start, with the pool where the first had none
// or the reverse, lists all three, pauses them again (the server's
// reconciliation at start-up), resumes them with their files, and its
// shutdown leaves no jail and no directory in either root. Before, the
// second start looked only in its own root: it listed none of them, the
// pause again was ErrSandboxGone (the server marked them lost) and the
// jails ran on.
func TestSandboxesFoundWhetherPoolMounted(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the clone pool and cgroups need root")
	}
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"pool then none", ClonesXFS, ClonesOff},
		{"none then pool", ClonesOff, ClonesXFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "bxr-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = os.RemoveAll(dir)
			})
			d1, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, Clones: tc.first})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ids := []string{"rootrun", "rootfrz", "rootfs"}
			eps := map[string]model.Endpoint{}
			for _, id := range ids {
				eps[id] = create(t, d1, id)
				if res := run(t, eps[id], "echo "+id+" > /workspace/kept"); res.ExitCode != 0 {
					t.Fatalf("%s: %+v", id, res)
				}
			}
			if err := d1.Pause(ctx, "rootfrz", api.PauseFreeze); err != nil {
				t.Fatal(err)
			}
			if err := d1.Pause(ctx, "rootfs", api.PauseFilesystem); err != nil {
				t.Fatal(err)
			}
			states := map[string]state{}
			for _, id := range ids {
				if states[id], err = readState(d1.sandboxDir(id)); err != nil {
					t.Fatal(err)
				}
			}
			// kill -9: d1 stops without a word; its jails run on, and
			// its pool, if any, stays mounted.
			d1.releaseHandles()

			d2, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, Clones: tc.second})
			if err != nil {
				t.Fatal(err)
			}
			shut := false
			t.Cleanup(func() {
				if !shut {
					_ = d2.Shutdown(context.Background())
				}
				_ = d1.Shutdown(context.Background()) // the pool's mount, the spawner
			})
			if d2.data == d1.data {
				t.Fatalf("both starts keep their sandboxes in %s: the test does not move the root", d1.data)
			}
			obs, err := d2.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]bool{}
			for _, o := range obs {
				listed[o.ID] = o.Alive
			}
			if diff := cmp.Diff(map[string]bool{"rootrun": true, "rootfrz": true, "rootfs": false}, listed); diff != "" {
				t.Errorf("the second start's List (id: alive) (-want +got):\n%s", diff)
			}
			for _, id := range []string{"rootfrz", "rootfs"} {
				mode := states[id].Paused
				if err := d2.Pause(ctx, id, mode); err != nil {
					t.Errorf("pause %s again (%s) after the restart: %v", id, mode, err)
				}
				if err := d2.Resume(ctx, id, nil); err != nil {
					t.Fatalf("resume %s after the restart: %v", id, err)
				}
			}
			for _, id := range ids {
				st, err := readState(d2.sandboxDir(id))
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				ep := model.Endpoint{Network: "unix", Address: st.Socket, Token: st.Token}
				if res := run(t, ep, "cat /workspace/kept"); res.Stdout != id+"\n" {
					t.Errorf("%s after the restart: %+v", id, res)
				}
				states[id] = st
			}
			// The second start's new sandboxes go to its own root.
			create(t, d2, "rootnew")
			if got, want := d2.sandboxDir("rootnew"), filepath.Join(d2.data, "sandboxes", "rootnew"); got != want {
				t.Errorf("a new sandbox's directory = %s, want %s", got, want)
			}

			shut = true
			if err := d2.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			for id, st := range states {
				if alive(st) {
					t.Errorf("%s: jail pid %d still runs after the shutdown", id, st.PID)
				}
			}
			for _, root := range []string{dir, filepath.Join(dir, cowMount)} {
				entries, _ := os.ReadDir(filepath.Join(root, "sandboxes"))
				for _, e := range entries {
					t.Errorf("left in %s/sandboxes after the shutdown: %s", root, e.Name())
				}
			}
		})
	}
}

// TestDeleteStopsJailOutOfReach: a sandbox whose directory is in a clone
// pool this start could not mount is out of reach, its jail still
// running; the server marks it lost, and the Delete that comes with it
// kills and removes its cgroup, jail and all, rather than leave it
// running where nothing will ever find it again.
func TestDeleteStopsJailOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the clone pool and cgroups need root")
	}
	dir, err := os.MkdirTemp("", "bxo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d1, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, Clones: ClonesXFS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d1.Shutdown(context.Background()) })
	create(t, d1, "outofreach")
	st, err := readState(d1.sandboxDir("outofreach"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Cgroup.Remove(context.Background()) })
	// kill -9, and the pool goes from view: the next start has none.
	d1.releaseHandles()
	if err := d1.unmountClonePool(); err != nil {
		t.Fatal(err)
	}
	d2, err := New(Config{StateDir: dir, SidecarPath: sidecarBin, Clones: ClonesOff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d2.Shutdown(context.Background()) })
	if alive, err := d2.Probe(context.Background(), "outofreach"); err != nil || alive {
		t.Fatalf("Probe of the sandbox out of reach = %v, %v; want false (the server marks it lost)", alive, err)
	}
	if !alive(st) {
		t.Fatal("the jail ended before the Delete: the test shows nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d2.Delete(ctx, "outofreach"); err != nil {
		t.Fatal(err)
	}
	if alive(st) {
		t.Errorf("jail pid %d still runs after the Delete of its lost sandbox", st.PID)
	}
	for _, cg := range st.Cgroup.Dirs {
		if exists(cg) {
			t.Errorf("cgroup %s left after the Delete", cg)
		}
	}
}
