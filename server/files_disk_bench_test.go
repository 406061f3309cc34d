//go:build linux

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar"
)

// BenchmarkFilesDisk is one write and one read of a 4 KiB file through
// the control plane (SQLite audit in a temp dir) to a real sidecar whose
// workspace is a loop-mounted ext4 disk, as a local sandbox's, and whose
// driver flushes it with syncfs (server/local's SyncDisk). sidecar-fsync:
// the sidecar fsyncs the write and the server does not flush (the kube
// path, and the local one before issue 27's step 63); host-flush: the
// sidecar writes the data out and renames, and the server's syncfs runs
// beside the audit commit (step 63). Needs root (mount).
func BenchmarkFilesDisk(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounting a loop disk needs root")
	}
	for _, c := range []struct {
		name      string
		hostFlush bool
	}{{"sidecar-fsync", false}, {"host-flush", true}} {
		b.Run(c.name, func(b *testing.B) { benchFilesDisk(b, c.hostFlush) })
	}
}

func benchFilesDisk(b *testing.B, hostFlush bool) {
	ws := mountBenchDisk(b)
	disk, err := os.Open(ws)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { disk.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const token = "bench-sidecar-token"
	sc := sidecar.New(sidecar.Options{Token: token, Workspace: ws, Log: log})
	scLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := apihttp.NewServer(sc, log)
	go func() { _ = hs.Serve(apihttp.Listener(scLn)) }()
	b.Cleanup(func() { hs.Close() })
	var d *benchDiskDriver
	e := newEnvWithDriver(b, server.Config{RateLimits: server.RateLimits{Ops: -1}}, openStore(b, b.TempDir()), func(f *fakeDriver) model.Driver {
		f.CreateFunc = func(context.Context, model.Spec) (model.Endpoint, error) {
			return model.Endpoint{Network: "tcp", Address: scLn.Addr().String(), Token: token}, nil
		}
		d = &benchDiskDriver{fakeDriver: f, disk: disk, hostFlush: hostFlush}
		return d
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	data := bytes.Repeat([]byte("x"), 4<<10)
	u := e.URL + sandboxPath(sb.ID, "/files/raw") + "?" + url.Values{"path": {"/workspace/bench-4k.bin"}}.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := func(method string, body io.Reader) []byte {
		req, _ := http.NewRequestWithContext(context.Background(), method, u, body)
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d %s", method, resp.StatusCode, got)
		}
		return got
	}
	commits := journalCommits(b, ws)
	before := commits()
	for b.Loop() {
		call(http.MethodPut, struct{ io.Reader }{bytes.NewReader(data)}) // chunked, as the client sends it
		if got := call(http.MethodGet, nil); len(got) != len(data) {
			b.Fatalf("read %d bytes, want %d", len(got), len(data))
		}
	}
	b.ReportMetric(float64(commits()-before)/float64(b.N), "commits/op")
}

// journalCommits returns what counts the journal commits of the ext4
// filesystem mounted at (or holding) dir.
func journalCommits(b *testing.B, dir string) func() int {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		b.Fatal(err)
	}
	dev, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		b.Fatal(err)
	}
	info := "/proc/fs/jbd2/" + filepath.Base(dev) + "-8/info" // 8: the journal's inode
	return func() int {
		raw, err := os.ReadFile(info)
		if err != nil {
			b.Fatal(err)
		}
		var n int
		if _, err := fmt.Sscanf(string(raw), "%d transactions", &n); err != nil {
			b.Fatalf("parse %s: %v", info, err)
		}
		return n
	}
}

// benchDiskDriver flushes its one disk with syncfs, as server/local's
// SyncDisk, and leaves file writes' flushes to it when hostFlush is set.
type benchDiskDriver struct {
	*fakeDriver
	disk      *os.File
	hostFlush bool
}

var _ model.FileFlusher = (*benchDiskDriver)(nil)

func (d *benchDiskDriver) SyncDisk(context.Context, string) error {
	return unix.Syncfs(int(d.disk.Fd()))
}

func (d *benchDiskDriver) FlushesFiles(string) bool { return d.hostFlush }

// mountBenchDisk mounts a new 64 MiB ext4 image (lazy inode tables
// initialised first, as a sandbox's disk template) and returns its
// workspace directory, owned by the sandbox user.
func mountBenchDisk(b *testing.B) string {
	dir := b.TempDir()
	img, mnt := filepath.Join(dir, "disk.img"), filepath.Join(dir, "mnt")
	for _, args := range [][]string{
		{"truncate", "-s", "64M", img},
		{"mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", img},
		{"mkdir", mnt},
		{"mount", "-o", "loop", img, mnt},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v %s", args, err, out)
		}
	}
	b.Cleanup(func() { _ = exec.Command("umount", "-d", mnt).Run() })
	ws := filepath.Join(mnt, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	return ws
}
