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

// ueventProbe opens the kernel's device event socket (AF_NETLINK,
// NETLINK_KOBJECT_UEVENT, and that protocol with high bits set, as the
// kernel reads an int) and a route socket through the raw syscall, printing
// each errno's name or "ok". If the event socket opens, it listens and
// prints the first event it gets within 30 s.
const ueventProbe = `
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for proto in (15, 15 | 1 << 32, 0):
    fd = libc.syscall(ctypes.c_long(41), ctypes.c_long(16), ctypes.c_long(2), ctypes.c_long(proto))
    print(hex(proto), "ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
    if fd >= 0:
        os.close(fd)
sys.stdout.flush()
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
except OSError:
    sys.exit(0)
s.bind((0, 1))
open("/tmp/listening", "w").close()
s.settimeout(30)
try:
    print("got", s.recv(65536).split(b"\0")[0].decode())
except socket.timeout:
    print("no event")
`

// TestNoHostUevents: a sandbox cannot open the kernel's device event
// socket. The kernel sends the host's uevents to every network namespace
// its initial user namespace owns, as a prepared slot's is, so a sandbox
// served by one watched the host's devices and every other sandbox's disk
// come and go (here: the loop device of a sandbox created while it
// listens). The seccomp filter refuses the socket; a route socket still
// opens.
func TestNoHostUevents(t *testing.T) {
	x := newSuite(t, func(c *local.Config) { c.Prepared = 2 })
	x.waitSlots(2)
	id := x.sandbox(api.CreateSandboxRequest{})
	if h := x.host(id); !strings.Contains(h.Cgroup.Dirs[0], "prep-") {
		t.Fatalf("the sandbox was not served by a prepared slot: cgroups %v", h.Cgroup.Dirs)
	}
	type result struct {
		res *api.ExecResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := x.exec(id, api.ExecRequest{Command: "python3 -c '" + ueventProbe + "'", Timeout: 60})
		done <- result{res, err}
	}()
	var got result
	for got.res == nil && got.err == nil {
		select {
		case got = <-done:
		case <-time.After(100 * time.Millisecond):
			if x.run(id, "test -e /tmp/listening").ExitCode == 0 {
				x.sandbox(api.CreateSandboxRequest{}) // attaches a loop device on the host
				got = <-done
			}
		}
	}
	if got.err != nil {
		t.Fatalf("probe: %v", got.err)
	}
	const want = "0xf EPERM\n0x10000000f EPERM\n0x0 ok\n"
	if got.res.Stdout != want {
		t.Errorf("netlink sockets in a sandbox:\n%s\nwant\n%s(stderr %q)", got.res.Stdout, want, got.res.Stderr)
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
