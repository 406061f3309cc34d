package securitytest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
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
