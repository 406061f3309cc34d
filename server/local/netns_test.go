//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/nstest"
	"github.com/boxkite/boxkite/server/model"
	"golang.org/x/sys/unix"
)

// netnsProbe tries, inside a sandbox, what a root that owned its network
// namespace could do: bring lo down (SIOCSIFFLAGS), add a link (an
// RTM_NEWLINK of a dummy through rtnetlink), set a net sysctl. It prints
// one line per attempt: its name and the errno, or "ok".
const netnsProbe = `
import errno, fcntl, socket, struct
def report(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def lo_down():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ifr = struct.pack("16sH14x", b"lo", 0)
    flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags & ~1))
def add_link():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    kind = b"dummy\0"
    info = struct.pack("HH", 4 + len(kind), 1) + kind + b"\0" * (-len(kind) % 4)
    linkinfo = struct.pack("HH", 4 + len(info), 18) + info
    name = b"x0\0\0"
    ifname = struct.pack("HH", 4 + 3, 3) + name
    body = struct.pack("BxHiII", 0, 0, 0, 0, 0) + ifname + linkinfo
    msg = struct.pack("IHHII", 16 + len(body), 16, 0x1 | 0x4 | 0x200 | 0x400, 1, 0) + body
    s.sendto(msg, (0, 0))
    data = s.recv(4096)
    err = struct.unpack("i", data[16:20])[0]
    if err:
        raise OSError(-err, "rtnetlink")
def sysctl():
    with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
        f.write("1")
report("lo-down", lo_down)
report("add-link", add_link)
report("sysctl", sysctl)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); print("loopback ok")
`

// TestPreparedNetNS: a sandbox served by a prepared slot lives in the
// network namespace the slot made ahead (issue 27), owned by the host's
// user namespace rather than the jail's, so its root cannot configure it:
// lo stays up and cannot be brought down, no link can be added, no net
// sysctl set. Two sandboxes never share one, and a slot's namespace is
// used once: a create that fails after taking the slot does not hand it
// to the next. A create no slot fits still gets a new namespace of its
// jail's own.
func TestPreparedNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a prepared pool needs root")
	}
	d, err := New(Config{StateDir: t.TempDir(), SidecarPath: sidecarBin, Prepared: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(context.Background()) })
	hostNet, hostUser := nstest.Inode(t, "/proc/self/ns/net"), nstest.Inode(t, "/proc/self/ns/user")

	// The first slot's namespace, held open so its inode stays its own:
	// the create below takes that slot and fails once its jail started.
	waitPrepared(t, d, 2)
	d.prepared.mu.Lock()
	first := d.prepared.ready[0]
	held, err := dupFile(first.p.js.NetNS)
	d.prepared.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	failed := nstest.Inode(t, fmt.Sprintf("/proc/self/fd/%d", held.Fd()))
	ctx, cancel := context.WithCancel(context.Background())
	_, err = d.Create(ctx, model.Spec{ID: "failed", Started: func(model.Endpoint) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a create cancelled as its jail started: %v, want context.Canceled", err)
	}
	waitPrepared(t, d, 2)
	d.prepared.mu.Lock()
	for _, s := range d.prepared.ready {
		if s.name == first.name || nstest.Inode(t, fmt.Sprintf("/proc/self/fd/%d", s.p.js.NetNS.Fd())) == failed {
			t.Errorf("slot %s, taken by a failed create, is back in the pool", first.name)
		}
	}
	d.prepared.mu.Unlock()

	seen := map[uint64]string{hostNet: "the host", failed: "the failed create"}
	for _, tc := range []struct {
		id         string
		spec       model.Spec
		preparedNS bool
	}{
		{"a", model.Spec{ID: "a"}, true},
		{"b", model.Spec{ID: "b"}, true},
		{"small-disk", model.Spec{ID: "small-disk", StorageGB: 0.25}, false}, // no slot fits it
	} {
		waitPrepared(t, d, 2)
		ep, err := d.Create(context.Background(), tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		st, err := readState(d.sandboxDir(tc.id))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(st.Cgroup.Dirs[0], preparedPrefix); got != tc.preparedNS {
			t.Fatalf("%s: served by a prepared slot %v, want %v", tc.id, got, tc.preparedNS)
		}
		ns := fmt.Sprintf("/proc/%d/ns/net", st.PID)
		in := nstest.Inode(t, ns)
		if other, ok := seen[in]; ok {
			t.Errorf("%s shares its network namespace with %s", tc.id, other)
		}
		seen[in] = tc.id
		owner, jailUser := nstest.Owner(t, ns), nstest.Inode(t, fmt.Sprintf("/proc/%d/ns/user", st.PID))
		switch {
		case tc.preparedNS && owner != hostUser:
			t.Errorf("%s: its network namespace is owned by user namespace %d, want the host's %d (the jail's is %d)", tc.id, owner, hostUser, jailUser)
		case !tc.preparedNS && owner != jailUser:
			t.Errorf("%s: its network namespace is owned by user namespace %d, want the jail's %d", tc.id, owner, jailUser)
		}
		res := run(t, ep, "python3 -c '"+netnsProbe+"'")
		want := "lo-down EPERM\nadd-link EPERM\nsysctl EROFS\nloopback ok\n"
		if res.ExitCode != 0 || res.Stdout != want {
			t.Errorf("%s: the network probe = %+v, want stdout %q", tc.id, res, want)
		}
		if res := run(t, ep, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"); res.Stdout != "lo\n" {
			t.Errorf("%s: network devices: %+v, want lo only", tc.id, res)
		}
	}
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
