package jail

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/sockprobe"
)

// TestRefuseVsock: a sidecar outside a jail (a pod) refuses AF_VSOCK
// sockets, with the family's high bits set too, and the kernel's device
// event socket (a pod's network namespace belongs to the node's initial
// user namespace, so the node's uevents reach it), in every thread and in
// the processes it starts, and keeps other families and netlink sockets. The pod's RuntimeDefault
// profile (containerd's: socket allowed when the family != 40, compared as
// 64 bits) let `socket(AF_VSOCK|1<<32, …)` through, and the kernel reads
// that as AF_VSOCK. Checked in a child process of the test binary, which
// loads the filter for good.
func TestRefuseVsock(t *testing.T) {
	switch os.Getenv("BOXKITE_TEST_VSOCK") {
	case "load":
		if err := RefuseVsock(); err != nil {
			fmt.Println("error:", err)
			return
		}
		// Another thread than the one that loaded it.
		done := make(chan string)
		go func() {
			runtime.LockOSThread()
			done <- sockprobe.Probe()
		}()
		fmt.Print(<-done)
		// A process it starts.
		cmd := exec.Command(os.Args[0], "-test.run=^TestRefuseVsock$")
		cmd.Env = append(os.Environ(), "BOXKITE_TEST_VSOCK=probe")
		out, err := cmd.Output()
		fmt.Printf("child: %s%v\n", out, err)
		return
	case "probe":
		fmt.Print(sockprobe.Probe())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRefuseVsock$", "-test.v=false")
	cmd.Env = append(os.Environ(), "BOXKITE_TEST_VSOCK=load")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	lines := strings.Split(got, "\n")
	count := func(s string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimPrefix(l, "child: "), s) {
				n++
			}
		}
		return n
	}
	if n := count("0x28 EPERM"); n != 2 {
		t.Errorf("socket(AF_VSOCK) refused with EPERM in %d of 2 places (thread, child):\n%s", n, got)
	}
	if n := count("0x100000028 EPERM"); n != 2 {
		t.Errorf("socket(AF_VSOCK|1<<32) refused with EPERM in %d of 2 places (thread, child):\n%s", n, got)
	}
	if n := count("0x2 ok"); n != 2 {
		t.Errorf("socket(AF_INET) worked in %d of 2 places (thread, child):\n%s", n, got)
	}
	for _, want := range []struct{ line, what string }{
		{"netlink 0xf EPERM", "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT) refused with EPERM"},
		{"netlink 0x10000000f EPERM", "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT|1<<32) refused with EPERM"},
		{"netlink 0x0 ok", "socket(AF_NETLINK, NETLINK_ROUTE) worked"},
	} {
		if n := count(want.line); n != 2 {
			t.Errorf("%s in %d of 2 places (thread, child):\n%s", want.what, n, got)
		}
	}
}
