package securitytest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/nstest"
	"github.com/boxkite/boxkite/server/local"
)

// TestPreparedSlotNetwork: a cold create served by the prepared pool
// (issue 27) runs in the network namespace its slot made ahead, owned by
// the host's user namespace and not the jail's: the sandbox cannot bring
// lo down, add a link or set a net sysctl, sees lo only and reaches
// nothing of the host; two sandboxes never share a namespace.
func TestPreparedSlotNetwork(t *testing.T) {
	x := newSuite(t, func(c *local.Config) { c.Prepared = 2 })
	hostUser := nstest.Inode(t, "/proc/self/ns/user")
	seen := map[uint64]string{nstest.Inode(t, "/proc/self/ns/net"): "the host"}
	for _, name := range []string{"a", "b"} {
		x.waitSlots(2)
		id := x.sandbox(api.CreateSandboxRequest{})
		h := x.host(id)
		if !strings.Contains(h.Cgroup.Dirs[0], "prep-") {
			t.Fatalf("sandbox %s was not served by a prepared slot: cgroups %v", name, h.Cgroup.Dirs)
		}
		ns := fmt.Sprintf("/proc/%d/ns/net", h.PID)
		in := nstest.Inode(t, ns)
		if other, ok := seen[in]; ok {
			t.Errorf("sandbox %s shares its network namespace with %s", name, other)
		}
		seen[in] = name
		if owner := nstest.Owner(t, ns); owner != hostUser {
			t.Errorf("sandbox %s: its network namespace is owned by user namespace %d, not the host's %d", name, owner, hostUser)
		}
		for _, c := range []struct{ cmd, want string }{
			{"ip link set lo down", "Operation not permitted"},
			{"ip link add x0 type dummy", "Operation not permitted"},
			{"echo 1 > /proc/sys/net/ipv4/ip_forward", "Read-only file system"},
			{"echo 1 > /proc/sys/net/ipv4/ping_group_range", "Read-only file system"},
		} {
			if res := x.run(id, c.cmd); res.ExitCode == 0 || !strings.Contains(res.Stderr, c.want) {
				t.Errorf("sandbox %s: %q = %+v, want a failure with %q", name, c.cmd, res, c.want)
			}
		}
		if res := x.run(id, "ip -o link show up | cut -d: -f2 | tr -d ' '"); res.Stdout != "lo\n" {
			t.Errorf("sandbox %s: links up %+v, want lo only", name, res)
		}
	}
}

// waitSlots waits until the driver's prepared pool holds n slots (its
// directories in StateDir/pool).
func (x *suite) waitSlots(n int) {
	x.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		slots, _ := filepath.Glob(filepath.Join(x.s.StateDir, "pool", "prep-*"))
		if len(slots) >= n {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the prepared pool holds %d slots after a minute, want %d", len(slots), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
