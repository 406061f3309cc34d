//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"

	"golang.org/x/sys/unix"
)

// TestSnapshotInterruptedByCrash: a server killed in the middle of a
// snapshot leaves the sandbox's cgroup and filesystem frozen (FIFREEZE
// outlives the process that asked for it). The driver of the restarted
// server thaws both when it adopts the sandbox, so a command writing to
// the workspace completes instead of blocking in the kernel for good (and
// `boxkite down` can kill it). The crash point is set up by hand: the
// state copyFrozen leaves before its copy, with nobody left to undo it.
func TestSnapshotInterruptedByCrash(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("loop-mounted disks need root")
	}
	d := newDriver(t)
	if d.storage != StorageLoop {
		t.Fatalf("storage %s: snapshots need loop-mounted disks", d.storage)
	}
	ep := create(t, d, "snapcrash")
	if res := run(t, ep, "echo before > /workspace/before"); res.ExitCode != 0 {
		t.Fatalf("write before: %+v", res)
	}
	dir := d.sandboxDir("snapcrash")
	t.Cleanup(func() { d.thawDisk(dir) }) // before the driver's Shutdown, should the test fail
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Cgroup.Freeze(true); err != nil {
		t.Fatal(err)
	}
	mnt, err := os.OpenFile(filepath.Join(dir, diskMount), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mnt.Close()
	if err := unix.IoctlSetInt(int(mnt.Fd()), fiFreeze, 0); err != nil {
		t.Fatal(err)
	}

	// The server restarts: a new driver on the same state directory.
	d2, err := New(Config{StateDir: d.cfg.StateDir, SidecarPath: sidecarBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d2.releaseHandles)
	if d2.frozen.has("snapcrash") {
		t.Error("the adopted sandbox is taken for one the storage watch froze")
	}
	if st.Cgroup.Frozen() {
		t.Error("the adopted sandbox's cgroup is still frozen")
	}
	// Hangs until runWith's deadline while the filesystem stays frozen.
	if res := run(t, ep, "echo after > /workspace/after && cat /workspace/before /workspace/after"); res.Stdout != "before\nafter\n" {
		t.Errorf("write after the restart: %+v", res)
	}
}

// TestDeleteThawsFrozenDisk: deleting a sandbox whose filesystem a
// snapshot left frozen, with a command blocked writing to it (what
// `boxkite down`'s cleanup meets after a crash mid-snapshot), thaws it
// first: the blocked writer dies and nothing of the sandbox stays.
func TestDeleteThawsFrozenDisk(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("loop-mounted disks need root")
	}
	d := newDriver(t)
	ep := create(t, d, "frozendel")
	dir := d.sandboxDir("frozendel")
	t.Cleanup(func() { d.thawDisk(dir) })
	mnt, err := os.OpenFile(filepath.Join(dir, diskMount), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mnt.Close()
	if err := unix.IoctlSetInt(int(mnt.Fd()), fiFreeze, 0); err != nil {
		t.Fatal(err)
	}
	// A writer blocked on the frozen filesystem: started, and seen
	// blocked (in D state, in the sandbox's cgroup) before the delete.
	const marker = "/workspace/blocked-7f3a"
	go execQuiet(ep, "echo x > "+marker)
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a writer blocked on the frozen disk", func() bool { return blockedWriter(marker) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := d.Delete(ctx, "frozendel"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if alive(st) {
		t.Error("the jail outlived its delete")
	}
}

// execQuiet runs command in the sandbox and ignores how it ends.
func execQuiet(ep model.Endpoint, command string) {
	body, _ := json.Marshal(api.ExecRequest{Command: command, Timeout: 60})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://sidecar/exec", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	if resp, err := unixClient(ep.Address).Do(req); err == nil {
		resp.Body.Close()
	}
}

// blockedWriter reports whether a process whose command line holds
// marker is in uninterruptible sleep (D): blocked on a frozen filesystem.
func blockedWriter(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm may hold spaces, the state follows its ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " D") {
			return true
		}
	}
	return false
}

// TestConcurrentSnapshots: snapshots of one sandbox asked for at once
// (two clients, a snapshot beside a fork) all succeed and all hold the
// sandbox's files; the second FIFREEZE of a frozen filesystem failed
// with EBUSY (a 500 sandbox_operation_failed) before they were taken one
// at a time.
func TestConcurrentSnapshots(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("loop-mounted disks need root")
	}
	d := newDriver(t)
	ep := create(t, d, "snapmany")
	if res := run(t, ep, "head -c 8M /dev/urandom > /workspace/data && echo kept > /workspace/kept"); res.ExitCode != 0 {
		t.Fatalf("write: %+v", res)
	}
	const n = 8
	refs := make([]model.SnapshotRef, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { refs[i], errs[i] = d.Snapshot(context.Background(), "snapmany", i%2 == 1, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("snapshot %d of %d at once: %v", i+1, n, err)
		}
	}
	if errs[0] == nil {
		restored := createFrom(t, d, "snaprestored", refs[0].Key)
		if res := run(t, restored, "cat /workspace/kept"); res.Stdout != "kept\n" {
			t.Errorf("restored: %+v", res)
		}
	}
	if res := run(t, ep, "echo still > /workspace/after && cat /workspace/after"); res.Stdout != "still\n" {
		t.Errorf("the sandbox after the snapshots: %+v", res)
	}
}

// TestAdoptedFrozenCgroupThawed: a crash between a snapshot's cgroup
// freeze and its filesystem freeze leaves only the cgroup frozen, which
// looks like the storage watch's freeze. With the host above its
// watermark the restarted driver thaws it when it adopts it rather than
// report it frozen for a full disk (507 until the watch's first look).
func TestAdoptedFrozenCgroupThawed(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("cgroups need root")
	}
	d := newDriver(t)
	ep := create(t, d, "cgfrozen")
	st, err := readState(d.sandboxDir("cgfrozen"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Cgroup.CanFreeze() {
		t.Fatal("no freezer")
	}
	if err := st.Cgroup.Freeze(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Cgroup.Freeze(false) })
	// A watermark of one byte: the host is above it, whatever its disk.
	d2, err := New(Config{StateDir: d.cfg.StateDir, SidecarPath: sidecarBin, Host: HostLimits{MinFreeDisk: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d2.releaseHandles)
	if d2.frozen.has("cgfrozen") || st.Cgroup.Frozen() {
		t.Fatalf("adopted frozen (recorded %v, cgroup %v) on a host with space", d2.frozen.has("cgfrozen"), st.Cgroup.Frozen())
	}
	if res := run(t, ep, "echo thawed"); res.Stdout != "thawed\n" {
		t.Errorf("exec after the restart: %+v", res)
	}
}
