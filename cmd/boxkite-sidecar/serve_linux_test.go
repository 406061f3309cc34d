package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/sockprobe"
)

// TestServeRefusesVsock: `boxkite-sidecar serve` (what a sandbox pod runs,
// outside any jail) refuses AF_VSOCK sockets before it serves, for itself
// and the commands it starts, the family's high bits set or not. The pod's
// RuntimeDefault seccomp profile let AF_VSOCK|1<<32 through. Run in a child
// process of the test binary: serve stops at the token file, which does not
// exist, after its lockdown; the child then tries the sockets itself and in
// a process it starts.
func TestServeRefusesVsock(t *testing.T) {
	switch os.Getenv("BOXKITE_TEST_SERVE_VSOCK") {
	case "serve":
		err := runServe([]string{"--listen", "tcp:127.0.0.1:0", "--workspace", os.TempDir()})
		fmt.Printf("serve: %v\n", err)
		fmt.Print(sockprobe.Probe())
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeRefusesVsock$")
		cmd.Env = append(os.Environ(), "BOXKITE_TEST_SERVE_VSOCK=probe")
		out, err := cmd.Output()
		fmt.Printf("%s%v\n", out, err)
		return
	case "probe":
		fmt.Print(sockprobe.Probe())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeRefusesVsock$")
	cmd.Env = append(os.Environ(), "BOXKITE_TEST_SERVE_VSOCK=serve",
		tokenFileEnv+"="+filepath.Join(t.TempDir(), "no-token"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "serve: read token") {
		t.Fatalf("serve did not stop at the token file:\n%s", got)
	}
	for _, want := range []struct {
		line  string
		where string
	}{
		{"0x28 EPERM", "socket(AF_VSOCK) refused"},
		{"0x100000028 EPERM", "socket(AF_VSOCK|1<<32) refused"},
		{"0x2 ok", "socket(AF_INET) working"},
		{"netlink 0xf EPERM", "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT) refused"},
		{"netlink 0x10000000f EPERM", "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT|1<<32) refused"},
		{"netlink 0x0 ok", "socket(AF_NETLINK, NETLINK_ROUTE) working"},
	} {
		if n := strings.Count(got, want.line+"\n"); n != 2 {
			t.Errorf("%s in %d of 2 places (serve, a command):\n%s", want.where, n, got)
		}
	}
}
