package securitytest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/sidecar/jail"
)

// rootOnlySocket serves HTTP on a unix socket only root may reach (a
// stand-in for the host's Docker or systemd socket) and counts the
// connections it gets.
func rootOnlySocket(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	dir, err := os.MkdirTemp("", "boxkite-hostsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "host.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"stdout":"answered by the host's socket\n","exit_code":0}`)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return path, &conns
}

// TestSidecarSocketNotRedirectable is finding 1's socket half: from
// inside a sandbox, an agent plants links to a root-only host socket (and
// FIFOs, files, directories) wherever the jail can write, by commands and
// through the file routes, including where the sidecar's socket used to
// be; even the jail's root, acting on the host paths, can create nothing
// beside the server's sockets. The server keeps talking to its own
// sidecar only, before and after a restart: the host socket never gets a
// connection and the tenant's requests keep working.
func TestSidecarSocketNotRedirectable(t *testing.T) {
	x := newSuite(t)
	hostSock, conns := rootOnlySocket(t)
	id := x.sandbox(api.CreateSandboxRequest{})
	h := x.host(id)
	ctx := context.Background()

	// Commands: every writable place, the run dir and the old socket path.
	plant := fmt.Sprintf(`
for d in /run/boxkite /workspace /workspace/run /tmp /dev/shm %[2]s; do
	mkdir -p "$d" 2>/dev/null
	ln -sfn %[1]s "$d/sidecar.sock" 2>/dev/null && echo "link $d"
	ln -sfn %[1]s "$d/egress.sock" 2>/dev/null
done
mkfifo /workspace/fifo.sock; echo x > /workspace/file.sock; mkdir -p /workspace/dir.sock
rm -f /run/boxkite/egress.sock 2>/dev/null && echo "removed in run dir"
touch /run/boxkite/x 2>/dev/null && echo "wrote in run dir"
true`, hostSock, "/mnt/user-data/outputs")
	res := x.run(id, plant)
	if strings.Contains(res.Stdout, "/run/boxkite") || strings.Contains(res.Stdout, "run dir") {
		t.Errorf("the sandbox wrote in /run/boxkite: %+v", res)
	}
	if !strings.Contains(res.Stdout, "link /workspace") {
		t.Fatalf("planting in the workspace failed, so the test proves nothing: %+v", res)
	}

	// The file routes: an archive of links, and writes aimed at the run dir.
	var arc bytes.Buffer
	tw := tar.NewWriter(&arc)
	for _, name := range []string{"sidecar.sock", "run/sidecar.sock", "../run/boxkite/sidecar.sock"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: hostSock})
	}
	_ = tw.Close()
	_, _ = x.c.UploadArchive(ctx, id, "/workspace/up", &arc)
	for _, p := range []string{"/run/boxkite/sidecar.sock", "/run/boxkite/egress.sock", "/workspace/../run/boxkite/x"} {
		if _, err := x.c.WriteFile(ctx, id, api.FileCreateRequest{Path: p, Content: "x"}); err == nil {
			t.Errorf("writing %s succeeded", p)
		}
	}

	// The jail's root itself, on the host: it may read the run dir, never
	// write it, nor reach the sandbox's directory where the socket is.
	runDir, sock := filepath.Join(h.dir, "run"), filepath.Join(h.dir, "sidecar.sock")
	for _, target := range []string{filepath.Join(runDir, "sidecar.sock"), filepath.Join(runDir, "egress.sock"), sock + ".new"} {
		cmd := exec.Command("ln", "-s", hostSock, target)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(h.HostIDBase), Gid: uint32(h.HostIDBase)}}
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("the jail's root (host uid %d) made %s: %s", h.HostIDBase, target, out)
		}
	}
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("the sidecar's socket is no longer the server's: %v, %v", fi, err)
	}

	check := func(when string) {
		t.Helper()
		for i := range 5 {
			res, err := x.exec(id, api.ExecRequest{Command: "echo ok " + fmt.Sprint(i)})
			if err != nil || res.Stdout != fmt.Sprintf("ok %d\n", i) {
				t.Errorf("%s: exec %d = %+v, %v", when, i, res, err)
			}
		}
		if _, err := x.c.WriteFile(ctx, id, api.FileCreateRequest{Path: "/workspace/note", Content: when}); err != nil {
			t.Errorf("%s: write: %v", when, err)
		}
		if n := conns.Load(); n != 0 {
			t.Errorf("%s: the host's socket got %d connections", when, n)
		}
	}
	check("after planting")
	x.s.Restart(t)
	x.c = client.New(x.s.BaseURL, x.s.APIKey)
	// Give the reconciler a moment to adopt before the checks.
	_ = eventually(10*time.Second, func() error {
		_, err := x.exec(id, api.ExecRequest{Command: "true"})
		return err
	})
	check("after a restart")
}

// The egress socket stays in the run dir rather than being handed in as a
// descriptor (the sidecar connects to it per request, and a restarted
// server must serve it again for sandboxes it adopts). That is as safe as
// a descriptor because the host side never depends on what the jail could
// do to the directory: the server binds, chowns and chmods the socket
// through the directory's and the socket's descriptors, and the directory
// belongs to host root, which the jail's user namespace does not map, so
// even the jail's root holding every capability of its namespaces (more
// than the sidecar has: it has no CAP_SYS_ADMIN and seccomp refuses
// mounts) cannot write it, whether the bind is read-only or not.

// egressOrigin serves "hello from origin" on the host's loopback.
func egressOrigin(t *testing.T) (port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from origin")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port
}

// testResolver maps the egress test's host names to fixed addresses.
type testResolver map[string]string

func (m testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

// TestEgressSocketNotRedirectable: with a sandbox granted egress, the
// agent, the jail's root acting on the host path, and the jail's root
// inside the jail with every capability of its namespaces (nsenter, which
// even remounts /run/boxkite read-write) try to remove, replace or
// redirect the egress socket and to plant links in the run dir. None
// succeeds: the run dir on the host holds the server's socket alone,
// owned by the jail's root and 0600; a root-only host socket never gets a
// connection; egress keeps working, and after a restart the server
// serves the same path again. (The socket itself is the jail's root's: it
// may change its mode, which decides nothing on the host side.)
func TestEgressSocketNotRedirectable(t *testing.T) {
	port := egressOrigin(t)
	x := newSuiteConfig(t, server.Config{
		EgressResolver:       testResolver{"origin.test": "127.0.0.1"},
		EgressPermitForTests: server.EgressPermitLoopbackForTests,
	})
	hostSock, conns := rootOnlySocket(t)
	id := x.sandbox(api.CreateSandboxRequest{EgressHosts: []string{"origin.test:" + port}})
	h := x.host(id)
	runDir := filepath.Join(h.dir, "run")
	fetch := `python3 -c 'import sys, urllib.request; print(urllib.request.urlopen("http://origin.test:%s/" % sys.argv[1], timeout=10).read().decode())' ` + port
	egressWorks := func(when string) {
		t.Helper()
		if res := x.run(id, fetch); res.ExitCode != 0 || res.Stdout != "hello from origin\n" {
			t.Errorf("%s: egress = exit %d, %q, %q; want the origin's answer", when, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	runDirIntact := func(when string) {
		t.Helper()
		entries, err := os.ReadDir(runDir)
		if err != nil || len(entries) != 1 || entries[0].Name() != jail.EgressSocketName {
			t.Fatalf("%s: the run dir holds %v (%v), want the egress socket alone", when, entries, err)
		}
		fi, err := os.Lstat(filepath.Join(runDir, jail.EgressSocketName))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 || int(st.Uid) != h.HostIDBase || int(st.Gid) != h.HostIDBase {
			t.Errorf("%s: egress socket %v owned by %d:%d, want a 0600 socket of the jail's root %d", when, fi.Mode(), st.Uid, st.Gid, h.HostIDBase)
		}
		di, err := os.Lstat(runDir)
		if err != nil {
			t.Fatal(err)
		}
		if dst := di.Sys().(*syscall.Stat_t); di.Mode().Perm() != 0o750 || dst.Uid != 0 || int(dst.Gid) != h.HostIDBase {
			t.Errorf("%s: run dir %v owned by %d:%d, want 0750 root:%d", when, di.Mode(), dst.Uid, dst.Gid, h.HostIDBase)
		}
		if n := conns.Load(); n != 0 {
			t.Errorf("%s: the host's socket got %d connections", when, n)
		}
	}
	egressWorks("before the attack")

	// The agent.
	res := x.run(id, fmt.Sprintf(`
rm -f /run/boxkite/egress.sock 2>/dev/null && echo removed
ln -sfn %s /run/boxkite/egress.sock 2>/dev/null && echo linked
ln -s %[1]s /run/boxkite/planted 2>/dev/null && echo planted
true`, hostSock))
	if res.Stdout != "" {
		t.Errorf("the agent changed /run/boxkite: %q", res.Stdout)
	}

	// The jail's root on the host, by path.
	asJailRoot := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(h.HostIDBase), Gid: uint32(h.HostIDBase)}}
	for _, args := range [][]string{
		{"ln", "-sfn", hostSock, filepath.Join(runDir, jail.EgressSocketName)},
		{"rm", "-f", filepath.Join(runDir, jail.EgressSocketName)},
		{"ln", "-s", hostSock, filepath.Join(runDir, "planted")},
		{"chmod", "0777", runDir},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = asJailRoot
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("the jail's root (host uid %d) ran %v: %s", h.HostIDBase, args, out)
		}
	}

	// The jail's root inside its namespaces, with all their capabilities.
	script := fmt.Sprintf(`
mount -o remount,rw,bind /run/boxkite && echo remounted
rm -f /run/boxkite/egress.sock && echo removed
ln -sfn %s /run/boxkite/egress.sock && echo linked
ln -s %[1]s /run/boxkite/planted && echo planted
chmod 0777 /run/boxkite && echo chmodded
mv /run/boxkite/egress.sock /run/boxkite/moved && echo moved
true`, hostSock)
	out, err := exec.Command("nsenter", "--target", fmt.Sprint(h.PID), "--user", "--mount", "--", "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter into the jail: %v: %s", err, out)
	}
	for _, did := range []string{"removed", "linked", "planted", "chmodded", "moved"} {
		if strings.Contains(string(out), did+"\n") {
			t.Errorf("the jail's root with its namespaces' capabilities %s in /run/boxkite:\n%s", did, out)
		}
	}
	t.Logf("the jail's root inside (remounting is no defence, ownership is):\n%s", out)

	runDirIntact("after the attacks")
	egressWorks("after the attacks")
	x.s.Restart(t)
	x.c = client.New(x.s.BaseURL, x.s.APIKey)
	_ = eventually(10*time.Second, func() error {
		_, err := x.exec(id, api.ExecRequest{Command: "true"})
		return err
	})
	egressWorks("after a restart")
	runDirIntact("after a restart")
}
