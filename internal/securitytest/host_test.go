package securitytest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestHostSecretsUnreadable: the host's secrets, the server's state and
// another sandbox's files are out of reach, by every path the attacker
// could know.
func TestHostSecretsUnreadable(t *testing.T) {
	x := newSuite(t)
	attacker, victim := x.sandbox(api.CreateSandboxRequest{Label: "attacker"}), x.sandbox(api.CreateSandboxRequest{Label: "victim"})
	secret := randomHex(t)
	if res := x.run(victim, "echo "+secret+" > /workspace/secret"); res.ExitCode != 0 {
		t.Fatalf("victim could not write its workspace: %+v", res)
	}
	victimDir := x.host(victim).dir
	victimWorkspace := filepath.Join(victimDir, "disk", "workspace")
	if b, err := os.ReadFile(filepath.Join(victimWorkspace, "secret")); err != nil || !strings.Contains(string(b), secret) {
		t.Fatalf("the victim's secret is not where the attacker will look for it (%v); the layout changed", err)
	}
	// A BOXKITE_HOME and a secret in the host's /tmp, as `boxkite up` would leave.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "local.toml"), []byte("api_key = '"+secret+"'\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	watch := x.watch(victim)
	probes := []struct{ name, command string }{
		{"/etc/shadow", "cat /etc/shadow"},
		{"/root", "ls -a /root"},
		{"root's ~/.boxkite", "ls /root/.boxkite"},
		// the jail's /home holds only E2B's home, a link to its own workspace
		{"/home", "ls -A /home | grep -vx user"},
		{"the server's state dir", "ls " + x.s.StateDir},
		{"the server's database", "head -c 16 " + filepath.Join(x.s.StateDir, "boxkite.db")},
		{"BOXKITE_HOME", "cat " + filepath.Join(home, "local.toml")},
		{"another sandbox's workspace by host path", "cat " + filepath.Join(victimWorkspace, "secret")},
		{"another sandbox's disk image", "head -c 1 " + filepath.Join(victimDir, "disk.img")},
		{"another sandbox's state", "cat " + filepath.Join(victimDir, "state.json")},
		{"/proc/1/environ", "cat /proc/1/environ"},
		{"the host's block devices", "ls /dev/vda /dev/sda /dev/nvme0n1 /dev/loop0"},
		{"/sys", "ls /sys"},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			res := x.run(attacker, p.command)
			if res.ExitCode == 0 || strings.Contains(res.Stdout, secret) {
				t.Errorf("%q succeeded: %+v", p.command, res)
			}
		})
	}
	t.Run("/proc/1 is the sandbox's own init", func(t *testing.T) {
		if got := x.run(attacker, "cat /proc/1/comm").Stdout; got != "boxkite-sidecar\n" {
			t.Errorf("/proc/1/comm = %q, want the jail's init", got)
		}
	})
	t.Run("the secret is nowhere in reach", func(t *testing.T) {
		// Searched for by halves, so the search's own command line does
		// not match.
		half := len(secret) / 2
		cmd := fmt.Sprintf("printf %%s%%s %s %s > /dev/shm/p; grep -rslF -f /dev/shm/p /workspace /tmp /mnt /etc /run /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; true", secret[:half], secret[half:])
		if res := x.run(attacker, cmd); res.Stdout != "" {
			t.Errorf("the victim's secret is readable in %s", res.Stdout)
		}
	})
	watch.check(t)
}

// TestOwnProcessesOnly: the sandbox sees its init, its sidecar and its own
// commands; not the host's processes nor another sandbox's.
func TestOwnProcessesOnly(t *testing.T) {
	x := newSuite(t)
	a, b := x.sandbox(api.CreateSandboxRequest{}), x.sandbox(api.CreateSandboxRequest{})
	if res := x.run(b, "sleep 300 >/dev/null 2>&1 &"); res.ExitCode != 0 {
		t.Fatalf("start a process in the other sandbox: %+v", res)
	}
	got := x.run(a, "ps -e -o pid=,comm=").Stdout
	var procs []string
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		f := strings.Fields(line)
		if f[0] == "1" {
			f[1] = "1:" + f[1] // pid 1 must be the init
		}
		procs = append(procs, f[1])
	}
	want := []string{"1:boxkite-sidecar", "ps"} // the sidecar is the init (issue 27); a plain command runs without sh
	if diff := cmp.Diff(want, procs); diff != "" {
		t.Errorf("processes the sandbox sees (-want +got):\n%s\n%s", diff, got)
	}
	if res := x.run(a, fmt.Sprintf("ls /proc/%d/root", os.Getpid())); res.ExitCode == 0 {
		t.Errorf("the sandbox reaches this test's process: %+v", res)
	}
}

// netProbe tries a TCP connection to each host:port argument and prints
// "target errno" per line, or "target connected".
const netProbe = `
import socket, sys
for t in sys.argv[1:]:
    host, port = t.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(3)
    try:
        s.connect((host.strip("[]"), int(port)))
        print(t, "connected")
    except OSError as e:
        print(t, e.errno, e.strerror)
`

// TestNoNetwork: no TCP to any address, including a listener the test
// starts on the host's loopback, the control plane's own port and the
// host's other addresses; no DNS.
func TestNoNetwork(t *testing.T) {
	x := newSuite(t)
	a, b := x.sandbox(api.CreateSandboxRequest{}), x.sandbox(api.CreateSandboxRequest{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	u, err := url.Parse(x.s.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{fmt.Sprintf("127.0.0.1:%d", port), u.Host}
	// The host's own non-loopback addresses: a packet to them would reach
	// the host's stack. No listener is needed: anything but "network is
	// unreachable" means the sandbox has a route.
	var remote []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			remote = append(remote, net.JoinHostPort(ipn.IP.String(), fmt.Sprint(port)))
		}
	}
	if len(remote) == 0 {
		t.Log("the host has no non-loopback address; only loopback is probed")
	}
	watch := x.watch(b)
	res := x.run(a, "python3 -c '"+netProbe+"' "+strings.Join(append(targets, remote...), " "))
	if res.ExitCode != 0 {
		t.Fatalf("probe failed to run: %+v", res)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if strings.HasSuffix(line, "connected") {
			t.Errorf("TCP connect succeeded: %s", line)
		}
	}
	for _, r := range remote {
		if !strings.Contains(res.Stdout, r+" 101 ") { // ENETUNREACH
			t.Errorf("connect to the host's address %s did not fail with ENETUNREACH:\n%s", r, res.Stdout)
		}
	}
	t.Run("bash /dev/tcp", func(t *testing.T) {
		cmd := fmt.Sprintf("bash -c 'echo > /dev/tcp/127.0.0.1/%d'", port)
		if res := x.run(a, cmd); res.ExitCode == 0 {
			t.Errorf("%s succeeded", cmd)
		}
	})
	t.Run("DNS", func(t *testing.T) {
		cmd := `python3 -c 'import socket; socket.getaddrinfo("localhost", 80); socket.getaddrinfo("example.com", 443)'`
		res := x.run(a, cmd)
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "gaierror") {
			t.Errorf("a DNS lookup did not fail as it must: %+v", res)
		}
	})
	t.Run("only lo", func(t *testing.T) {
		got := x.run(a, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").Stdout
		if got != "lo\n" {
			t.Errorf("network devices %q, want lo only", got)
		}
	})
	time.Sleep(100 * time.Millisecond) // let a late accept be counted
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's loopback listener accepted %d connections from the sandbox", n)
	}
	watch.check(t)
}

// TestTokenUnreachable: agent commands run as another uid than the
// sidecar, so its token (in its memory, never in argv or the environment)
// stays out of reach, and the sidecar cannot be signalled or traced.
func TestTokenUnreachable(t *testing.T) {
	x := newSuite(t)
	a := x.sandbox(api.CreateSandboxRequest{})
	token := x.host(a).Token
	if len(token) < 32 {
		t.Fatalf("no token in the sandbox's state: %q", token)
	}
	const sidecar = "S=$(pgrep -nf '^boxkite-sidecar (init|serve)') && test -n \"$S\" && "
	probes := []struct{ name, command string }{
		{"environ", sidecar + "cat /proc/$S/environ"},
		{"memory", sidecar + "python3 -c \"open('/proc/$S/mem', 'rb').read(1)\""},
		{"maps", sidecar + "cat /proc/$S/maps"},
		{"fds", sidecar + "ls /proc/$S/fd"},
		{"cwd and root", sidecar + "ls /proc/$S/root/ /proc/$S/cwd/"},
		{"init's environ", "cat /proc/1/environ"},
		{"init's memory", "python3 -c \"open('/proc/1/mem', 'rb').read(1)\""},
		{"socket dir", "ls /run/boxkite"},
		{"socket", "python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('/run/boxkite/sidecar.sock')\""},
		{"signal", sidecar + "kill -STOP $S"},
		{"kill", sidecar + "kill -KILL $S"},
		{"kill init", "kill -KILL 1"},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			res := x.run(a, p.command)
			if res.ExitCode == 0 || strings.Contains(res.Stdout, token) {
				t.Errorf("%q succeeded: %+v", p.command, res)
			}
		})
	}
	t.Run("cmdline holds no token", func(t *testing.T) {
		res := x.run(a, sidecar+"tr '\\0' ' ' < /proc/$S/cmdline")
		if !strings.HasPrefix(res.Stdout, "boxkite-sidecar ") || strings.Contains(res.Stdout, token) {
			t.Errorf("sidecar cmdline = %+v", res)
		}
	})
	t.Run("sidecar survived", func(t *testing.T) {
		if res := x.run(a, "true"); res.ExitCode != 0 {
			t.Errorf("exec after the attacks: %+v", res)
		}
	})
}
