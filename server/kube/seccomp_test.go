package kube_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/kube"
)

// vsockProbe tries socket() of AF_VSOCK, AF_VSOCK|1<<32 and AF_INET through
// the raw syscall (python's socket module would cut the family to an int)
// and prints each errno's name, or "ok".
const vsockProbe = `
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for fam in (40, 40 | 1 << 32, 2):
    fd = libc.syscall(ctypes.c_long(41), ctypes.c_long(fam), ctypes.c_long(1), ctypes.c_long(0))
    print(hex(fam), "ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
`

// TestPodRefusesVsock: a command in a sandbox pod cannot open an AF_VSOCK
// socket, the family's high bits set or not, and can open others. vsock
// is not network-namespaced (the node's hypervisor and vsock listeners,
// past every NetworkPolicy), and the pod's RuntimeDefault profile does
// not hold: containerd's allows socket when the family is not 40,
// compared as 64 bits, so 40|1<<32 passed. The sidecar the test kubelet
// runs is the pod's, with the pod's arguments; its filter is the fix.
func TestPodRefusesVsock(t *testing.T) {
	e := newEnv(t, kube.Config{})
	e.start(t)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Command: "python3 -c " + shellQuote(vsockProbe)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("probe: %+v, %v", res, err)
	}
	const want = "0x28 EPERM\n0x100000028 EPERM\n0x2 ok\n"
	if res.Stdout != want {
		t.Errorf("socket() in a pod:\n%s\nwant\n%s(stderr %q)", res.Stdout, want, res.Stderr)
	}
}
