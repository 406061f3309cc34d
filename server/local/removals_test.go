//go:build linux

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdRemovals makes d's removals after their answer wait until the
// test ends or calls the returned release, as if d's process had died at
// the answer; release runs before d's Shutdown, which waits for them.
func holdRemovals(t *testing.T, d *Driver) (release func()) {
	t.Helper()
	hold := make(chan struct{})
	d.removals.mu.Lock()
	d.removals.hold = hold
	d.removals.mu.Unlock()
	released := false
	release = func() {
		if !released {
			released = true
			close(hold)
		}
	}
	t.Cleanup(release)
	return release
}

// needLoopStorage skips (fails in CI) unless d keeps disks on loop devices.
func needLoopStorage(t *testing.T, d *Driver) {
	t.Helper()
	if d.storage == StorageLoop {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("loop storage needs root and mkfs.ext4, as CI has")
	}
	t.Skip("loop storage needs root and mkfs.ext4")
}

// wantRemovalsDone: nothing is left in the data root's removing/: no
// directory, no mount, no loop device on an image there.
func wantRemovalsDone(t *testing.T, d *Driver) {
	t.Helper()
	removing := filepath.Join(d.data, removingDir)
	if got := mountsUnder(removing); len(got) != 0 {
		t.Errorf("still mounted after the removals finished: %v", got)
	}
	if entries, _ := os.ReadDir(removing); len(entries) != 0 {
		t.Errorf("%d directories left in %s after the removals finished", len(entries), removing)
	}
	// Autoclear detaches a loop device moments after its unmount.
	for deadline := time.Now().Add(30 * time.Second); len(loopsBackedUnder(removing)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard, not a latency
			t.Fatalf("loop devices still attached: %+v", loopsBackedUnder(removing))
		}
	}
}

// TestDeleteFinishesAfterAnswer: a delete answers once the jail is dead
// and its cgroups are gone, with its disk still mounted, set aside
// (issue 27: the unmount is the filesystem's shutdown, ~9 sleeps, one of
// them an RCU grace period); a create of the same id right after, in
// place or from a prepared slot, gets a directory, cgroups and a disk of
// its own and sees nothing of the old one; once the held removal runs,
// nothing of the old sandbox is left. Fails with the unmount before the
// answer: nothing is mounted aside when Delete returns.
func TestDeleteFinishesAfterAnswer(t *testing.T) {
	for _, prepared := range []int{0, 1} {
		t.Run(fmt.Sprintf("prepared=%d", prepared), func(t *testing.T) {
			d := newDriverWith(t, Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Prepared: prepared})
			needLoopStorage(t, d)
			release := holdRemovals(t, d)
			ctx := t.Context()
			const id = "again"
			waitPrepared(t, d, prepared)
			ep := create(t, d, id)
			if res := run(t, ep, "echo old > /workspace/mark"); res.ExitCode != 0 {
				t.Fatalf("write a mark: %+v", res)
			}
			st, err := readState(d.sandboxDir(id))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			if alive(st) {
				t.Errorf("the jail (pid %d) runs after its delete answered", st.PID)
			}
			for _, dir := range st.Cgroup.Dirs {
				if exists(dir) {
					t.Errorf("cgroup %s is left after the delete answered", dir)
				}
			}
			if exists(d.sandboxDir(id)) {
				t.Errorf("%s is left after the delete answered", d.sandboxDir(id))
			}
			aside := mountsUnder(filepath.Join(d.data, removingDir))
			if len(aside) != 1 {
				t.Fatalf("mounts set aside when the delete answered = %v, want the disk's (unmounted after the answer)", aside)
			}

			waitPrepared(t, d, prepared)
			ep = create(t, d, id)
			if res := run(t, ep, "cat /workspace/mark 2>/dev/null || echo absent"); res.Stdout != "absent\n" {
				t.Errorf("the new sandbox %s reads the deleted one's mark: %+v", id, res)
			}
			st2, err := readState(d.sandboxDir(id))
			if err != nil {
				t.Fatal(err)
			}
			if got := mountsUnder(d.sandboxDir(id)); len(got) != 1 || !strings.HasPrefix(st2.Jail.Workspace, got[0]+"/") {
				t.Errorf("the new sandbox's mounts = %v, workspace %s: want its own disk", got, st2.Jail.Workspace)
			}

			release()
			if err := d.removals.wait(ctx); err != nil {
				t.Fatal(err)
			}
			wantRemovalsDone(t, d)
			if got := mountsUnder(d.sandboxDir(id)); len(got) != 1 {
				t.Errorf("the new sandbox's mounts after the old removal = %v, want its disk", got)
			}
			if res := run(t, ep, "echo new > /workspace/mark && cat /workspace/mark"); res.Stdout != "new\n" {
				t.Errorf("the new sandbox after the old one's removal: %+v", res)
			}
		})
	}
}

// TestRemovalAfterDeath: the driver's process dies after a delete's
// answer, before its removal ran. The next driver on the state directory,
// or `boxkite down`'s Cleanup, finishes it: no mount, loop device or
// directory is left. Fails without the sweep (finishRemovals): the disk
// stays mounted (restart), its directory stays (cleanup).
func TestRemovalAfterDeath(t *testing.T) {
	for _, next := range []string{"restart", "cleanup"} {
		t.Run(next, func(t *testing.T) {
			stateDir := t.TempDir()
			d := newDriverWith(t, Config{StateDir: stateDir, SidecarPath: sidecarBin})
			needLoopStorage(t, d)
			holdRemovals(t, d) // never runs before the next driver's
			create(t, d, "dies")
			if err := d.Delete(t.Context(), "dies"); err != nil {
				t.Fatal(err)
			}
			if got := mountsUnder(filepath.Join(d.data, removingDir)); len(got) != 1 {
				t.Fatalf("mounts set aside = %v, want the disk's", got)
			}
			switch next {
			case "restart":
				d2 := newDriverWith(t, Config{StateDir: stateDir, SidecarPath: sidecarBin})
				if err := d2.removals.wait(t.Context()); err != nil {
					t.Fatal(err)
				}
			case "cleanup":
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				left, err := Cleanup(ctx, Config{StateDir: stateDir})
				if err != nil || len(left) != 0 {
					t.Errorf("Cleanup = %+v, %v; want nothing left", left, err)
				}
			}
			wantRemovalsDone(t, d)
		})
	}
}
