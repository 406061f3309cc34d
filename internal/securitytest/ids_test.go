package securitytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local"
)

// nsGetOwnerUID is the ioctl NS_GET_OWNER_UID, _IO(0xb7, 0x4): the uid
// that created a user namespace.
const nsGetOwnerUID = 0xb704

// TestHostIDsPerSandbox: two sandboxes run as different host ids, each
// from its own range (init and the sidecar as the range's base, the
// agent's commands as base+1001), and each user namespace is owned by its
// range's base uid, never by root.
func TestHostIDsPerSandbox(t *testing.T) {
	x := newSuite(t)
	bases := map[int]string{}
	for _, label := range []string{"one", "two"} {
		id := x.sandbox(api.CreateSandboxRequest{Label: label})
		h := x.host(id)
		base := h.HostIDBase
		if base < 1<<16 {
			t.Fatalf("sandbox %s maps host ids from %d; want a range of its own above the host's ids", label, base)
		}
		if other, ok := bases[base]; ok {
			t.Fatalf("sandboxes %s and %s map the same host ids from %d", label, other, base)
		}
		bases[base] = label
		if got := procIDs(t, h.PID); got != [2][4]int{{base, base, base, base}, {base, base, base, base}} {
			t.Errorf("%s: init runs as host uids and gids %v, want all %d", label, got, base)
		}
		owner, err := nsOwner(h.PID)
		if err != nil {
			t.Fatal(err)
		}
		if owner != base {
			t.Errorf("%s: its user namespace is owned by host uid %d, want %d (its range's base, not root)", label, owner, base)
		}
		x.run(id, "sleep 4242 >/dev/null 2>&1 &")
		agent := h.findProc(t, "sleep\x004242\x00")
		if want := base + 1001; procIDs(t, agent) != [2][4]int{{want, want, want, want}, {want, want, want, want}} {
			t.Errorf("%s: an agent command runs as host ids %v, want all %d", label, procIDs(t, agent), want)
		}
		if owner, err := nsOwner(agent); err != nil || owner != base {
			t.Errorf("%s: the agent's user namespace is owned by %d (%v), want %d", label, owner, err, base)
		}
	}
}

// TestVolumeSharedAcrossRanges: a volume mounted by two sandboxes of
// different host ranges is readable and writable by both; each sees the
// other's files as owned by its own sandbox user; on disk they hold the
// canonical ids.
func TestVolumeSharedAcrossRanges(t *testing.T) {
	x := newSuite(t)
	ctx := context.Background()
	vol, err := x.c.CreateVolume(ctx, api.CreateVolumeRequest{Label: "shared", SizeGB: 0.03})
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string]string{vol.ID: "/workspace/shared"}
	a := x.sandbox(api.CreateSandboxRequest{Label: "a", VolumeMounts: mounts})
	b := x.sandbox(api.CreateSandboxRequest{Label: "b", VolumeMounts: mounts})
	if x.host(a).HostIDBase == x.host(b).HostIDBase {
		t.Fatalf("sandboxes a and b share a host range; the test needs two")
	}
	steps := []struct{ sandbox, command, want string }{
		{a, "cd /workspace/shared && echo from-a > f && mkdir d && echo in-d > d/x && stat -c '%U:%G %a' f d", "sandbox:sandbox 644\nsandbox:sandbox 755\n"},
		{b, "cd /workspace/shared && stat -c '%U:%G' f d d/x && echo from-b >> f && echo from-b > d/y && rm d/x && cat f", "sandbox:sandbox\nsandbox:sandbox\nsandbox:sandbox\nfrom-a\nfrom-b\n"},
		{a, "cd /workspace/shared && stat -c '%U:%G' d/y && ls d && echo again >> d/y && cat d/y", "sandbox:sandbox\ny\nfrom-b\nagain\n"},
	}
	for _, s := range steps {
		if res := x.run(s.sandbox, s.command); res.ExitCode != 0 || res.Stdout != s.want {
			t.Fatalf("%q: %+v, want stdout %q", s.command, res, s.want)
		}
	}
	data := filepath.Join(x.s.StateDir, "volumes", vol.ID, "mnt", "data")
	for _, name := range []string{".", "f", "d", "d/y"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(data, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 1001 || st.Gid != 1001 {
			t.Errorf("on disk, %s is owned by %d:%d, want the canonical 1001:1001", name, st.Uid, st.Gid)
		}
	}
}

// procIDs returns the real, effective, saved and filesystem uids and gids
// of a host process, from /proc/<pid>/status.
func procIDs(t *testing.T, pid int) [2][4]int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ids [2][4]int
	for _, line := range strings.Split(string(b), "\n") {
		for i, key := range []string{"Uid:", "Gid:"} {
			if strings.HasPrefix(line, key) {
				if _, err := fmt.Sscan(line[len(key):], &ids[i][0], &ids[i][1], &ids[i][2], &ids[i][3]); err != nil {
					t.Fatalf("parse %q: %v", line, err)
				}
			}
		}
	}
	return ids
}

// nsOwner asks the kernel which uid owns the user namespace of pid.
func nsOwner(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var uid uint32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nsGetOwnerUID, uintptr(unsafe.Pointer(&uid))); e != 0 {
		return 0, fmt.Errorf("NS_GET_OWNER_UID of %d: %w", pid, e)
	}
	return int(uid), nil
}

// findProc returns the host pid of the sandbox's process whose command
// line is cmdline (NUL-separated).
func (h host) findProc(t *testing.T, cmdline string) int {
	t.Helper()
	var pid int
	err := eventually(responsiveWithin, func() error {
		procs, err := h.cgroupFile("cgroup.procs")
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(procs) {
			var p int
			fmt.Sscan(f, &p)
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if bytes.Equal(b, []byte(cmdline)) {
				pid = p
				return nil
			}
		}
		return fmt.Errorf("no process %q in the sandbox's cgroup", cmdline)
	})
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestIDRangesExhausted: when every host id range of the layout is leased,
// a create is refused with 503 host_capacity naming the id ranges (not a
// 502), sandboxes already running keep working, and deleting one gives its
// range back to the next create. The layout here is one range of its own,
// past the default layout, in a lease directory of this test's.
func TestIDRangesExhausted(t *testing.T) {
	const first = 0x7fd00000 // past the default layout (which ends at 0x7fa00000), below systemd's foreign range
	leases := filepath.Join(t.TempDir(), "id-ranges")
	x := newSuite(t, func(c *local.Config) {
		c.IDRangeDir, c.IDRangeFirst, c.IDRangeCount = leases, first, 1
	})
	ctx := context.Background()
	held := x.sandbox(api.CreateSandboxRequest{Label: "holds the only range"})
	if base := x.host(held).HostIDBase; base != first {
		t.Fatalf("the sandbox maps host ids from %d, want the layout's only range %d", base, first)
	}
	_, err := x.c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "no range left"})
	ae, ok := errors.AsType[*api.Error](err)
	if !ok || ae.Status != http.StatusServiceUnavailable || ae.Code != api.CodeHostCapacity {
		t.Fatalf("create with every range leased = %v; want 503 %s", err, api.CodeHostCapacity)
	}
	if d, _ := ae.Details.(map[string]any); d["resource"] != api.HostIDRanges || ae.Hint == "" {
		t.Errorf("refusal details %v, hint %q; want resource %q and a hint", ae.Details, ae.Hint, api.HostIDRanges)
	}
	if res := x.run(held, "echo still here"); res.Stdout != "still here\n" {
		t.Errorf("the running sandbox after the refusal: %+v", res)
	}
	if err := x.c.DeleteSandbox(ctx, held); err != nil {
		t.Fatal(err)
	}
	next := x.sandbox(api.CreateSandboxRequest{Label: "after the delete"})
	if base := x.host(next).HostIDBase; base != first {
		t.Errorf("the next sandbox maps host ids from %d, want the range given back, %d", base, first)
	}
}
