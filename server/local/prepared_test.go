//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// waitPrepared waits until the prepared pool holds n slots.
func waitPrepared(t *testing.T, d *Driver, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for d.preparedReady() != n {
		if time.Now().After(deadline) {
			t.Fatalf("prepared pool holds %d slots after 30s, want %d", d.preparedReady(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPreparedPool: a cold create takes a slot made ahead (issue 27) and
// the sandbox works like one prepared in place: its jail's paths are its
// own directory's, its workspace is writable, it passes the isolation
// probes; a create the slots do not fit prepares in place; the pool
// refills; Shutdown leaves no slot, mount or cgroup behind.
func TestPreparedPool(t *testing.T) {
	stateDir := t.TempDir()
	d, err := New(Config{StateDir: stateDir, SidecarPath: sidecarBin, Prepared: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitPrepared(t, d, 2)
	ep := create(t, d, "prep")
	dir := d.sandboxDir("prep")
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Jail == nil || st.Jail.RunDir != filepath.Join(dir, "run") || !strings.HasPrefix(st.Jail.Workspace, dir+"/") {
		t.Errorf("the taken slot's jail paths = %+v, want under %s", st.Jail, dir)
	}
	if len(st.Cgroup.Dirs) == 0 || !strings.Contains(st.Cgroup.Dirs[0], preparedPrefix) {
		t.Errorf("cgroups %v: the create did not take a prepared slot", st.Cgroup.Dirs)
	}
	if res := run(t, ep, "echo hi > /workspace/f && cat /workspace/f && df --output=target /workspace | tail -1"); res.Stdout != "hi\n/workspace\n" {
		t.Errorf("workspace of the prepared sandbox: %+v", res)
	}
	for _, p := range isolationProbes(stateDir, filepath.Join(dir, diskMount, "workspace"), 1) {
		if p.name == "sees only its own processes" || strings.Contains(p.command, "127.0.0.1") {
			continue
		}
		res := run(t, ep, p.command)
		if (res.ExitCode == 0) != p.ok {
			t.Errorf("%s: %q exited %d, want success %v; %+v", p.name, p.command, res.ExitCode, p.ok, res)
		} else if p.stdout != nil {
			if why := p.stdout(res.Stdout); why != "" {
				t.Errorf("%s: %s", p.name, why)
			}
		}
	}
	waitPrepared(t, d, 2)

	// Not the default storage: prepared in place.
	if _, err := d.Create(t.Context(), model.Spec{ID: "big", StorageGB: 7}); err != nil {
		t.Fatal(err)
	}
	if st, err := readState(d.sandboxDir("big")); err != nil || len(st.Cgroup.Dirs) == 0 || strings.Contains(st.Cgroup.Dirs[0], preparedPrefix) {
		t.Errorf("a create no slot fits has cgroups %v (%v), want its own", st.Cgroup.Dirs, err)
	}
	if got := d.preparedReady(); got != 2 {
		t.Errorf("%d slots after a create they do not fit, want 2", got)
	}
	// A taken id is refused as without the pool.
	if _, err := d.Create(t.Context(), model.Spec{ID: "prep"}); err == nil {
		t.Error("a second create of the same id succeeded")
	}

	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(d.poolDir()); err != nil || len(entries) != 0 {
		t.Errorf("pool dir after Shutdown: %v (%v), want empty", entries, err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), stateDir) {
		t.Errorf("mounts under the state dir outlived Shutdown:\n%s", mounts)
	}
}

// TestPreparedPoolDisks: a prepared slot's disk is opened (and flushed)
// when the slot is made, and the create that takes it holds that file
// under its own id, so Create no longer opens and syncfs's the disk on
// its request path (issue 27); SyncDisk works on it and Delete closes it.
func TestPreparedPoolDisks(t *testing.T) {
	t.Parallel()
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Prepared: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	if d.storage != StorageLoop {
		t.Fatalf("storage %v, want loop disks (tests run as root)", d.storage)
	}
	waitPrepared(t, d, 1)
	d.prepared.mu.Lock()
	slot := d.prepared.ready[0].name
	d.prepared.mu.Unlock()
	testDiskHandedOver(t, d, slot, "prep")
}
