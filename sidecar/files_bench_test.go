//go:build linux

package sidecar

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// onDisks runs fn once per kind of filesystem a workspace can be on, with
// a fresh workspace and the options to serve it with: as root, an ext4
// image loop-mounted as a sandbox's disk is (where an fsync costs what it
// costs there), a tmpfs (where it costs nothing, which leaves the rest of
// the route), and that tmpfs served as the sandbox user, as in a jail
// (file work switches to its ids); else a temp dir. Every typed root is
// there, as in a jail (jailRoots).
func onDisks(b *testing.B, fn func(b *testing.B, opts Options)) {
	opts := func(ws string) Options {
		return Options{Token: testToken, Workspace: ws, Roots: jailRoots(b, b.TempDir(), ws), Log: slog.New(slog.DiscardHandler)}
	}
	if os.Geteuid() != 0 {
		b.Run("tempdir", func(b *testing.B) { fn(b, opts(b.TempDir())) })
		return
	}
	b.Run("ext4", func(b *testing.B) { fn(b, opts(mountExt4(b, b.TempDir()))) })
	b.Run("tmpfs", func(b *testing.B) { fn(b, opts(mountTmpfs(b, "256m"))) })
	b.Run("tmpfs-user", func(b *testing.B) {
		o := opts(mountTmpfs(b, "256m"))
		// The benchmark's own temporary directory is 0700; its parent is
		// the shared /tmp, which must keep its mode (1777).
		if err := os.Chmod(filepath.Dir(o.Workspace), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Chown(o.Workspace, 1001, 1001); err != nil {
			b.Fatal(err)
		}
		o.RunAs = &RunAs{UID: 1001, GID: 1001}
		fn(b, o)
	})
}

// BenchmarkUpload is PUT /files/raw of a new version of one file, through
// HTTP on loopback: resolution, the temp file, its fsync, the rename and
// the directory's fsync.
func BenchmarkUpload(b *testing.B) {
	onDisks(b, func(b *testing.B, opts Options) {
		for _, size := range []int{4 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
				srv, _ := newServer(b, opts)
				body := strings.Repeat("x", size)
				url := srv.URL + "/files/raw?path=a/b/c/file.bin"
				b.SetBytes(int64(size))
				for b.Loop() {
					benchCall(b, http.MethodPut, url, body)
				}
			})
		}
	})
}

// BenchmarkView is POST /view of a 4 KiB text file three directories deep.
func BenchmarkView(b *testing.B) {
	onDisks(b, func(b *testing.B, opts Options) {
		ws := opts.Workspace
		if err := os.MkdirAll(ws+"/a/b/c", 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(ws+"/a/b/c/file.txt", []byte(strings.Repeat("line of text\n", 315)), 0o644); err != nil {
			b.Fatal(err)
		}
		srv, _ := newServer(b, opts)
		for b.Loop() {
			benchCall(b, http.MethodPost, srv.URL+"/view", `{"path":"a/b/c/file.txt"}`)
		}
	})
}

// BenchmarkDownload is GET /files/raw of a 4 KiB file three directories
// deep: the read half of issue 27's small-file round trip.
func BenchmarkDownload(b *testing.B) {
	onDisks(b, func(b *testing.B, opts Options) {
		srv, _ := newServer(b, opts)
		url := srv.URL + "/files/raw?path=a/b/c/file.bin"
		benchCall(b, http.MethodPut, url, strings.Repeat("x", 4<<10))
		for b.Loop() {
			benchCall(b, http.MethodGet, url, "")
		}
	})
}

// BenchmarkArchiveUpload is POST /files/archive of 100 files of 4 KiB in
// 10 directories: the cost of placing entries, and of the one sync per
// filesystem before the answer.
func BenchmarkArchiveUpload(b *testing.B) {
	var entries []tarEntry
	for i := range 100 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("d%d/f%d", i%10, i), body: strings.Repeat("y", 4<<10)})
	}
	archive := string(tarOf(b, entries...))
	onDisks(b, func(b *testing.B, opts Options) {
		srv, _ := newServer(b, opts)
		for b.Loop() {
			benchCall(b, http.MethodPost, srv.URL+"/files/archive?path=tree", archive)
		}
	})
}

func benchCall(b *testing.B, method, url, body string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s %s = %d", method, url, resp.StatusCode)
	}
}

// jailRoots lays the typed roots out under base as in a jail, every one
// present, with the workspace ws: a Handler on them finds its roots once,
// as a jail's sidecar does, where one with a root missing looks for them
// again on every request.
func jailRoots(tb testing.TB, base, ws string) Roots {
	tb.Helper()
	r := Roots{
		Workspace: ws,
		Tmp:       filepath.Join(base, "tmp"),
		Outputs:   filepath.Join(base, "mnt/user-data/outputs"),
		Uploads:   filepath.Join(base, "mnt/user-data/uploads"),
		Skills:    filepath.Join(base, "mnt/skills"),
	}
	for _, d := range []string{r.Tmp, r.Outputs, r.Uploads, r.Skills} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// BenchmarkRawHandler is PUT then GET /files/raw of a 4 KiB file served by
// the Handler alone (no connection, no client), with every root present
// as in a jail: what the sidecar's own code costs per request, allocations
// included.
func BenchmarkRawHandler(b *testing.B) {
	onDisks(b, func(b *testing.B, opts Options) {
		h := New(opts)
		data := bytes.Repeat([]byte("x"), 4<<10)
		const url = "/files/raw?path=a/b/c/file.bin"
		do := func(method string, body []byte) {
			req := httptest.NewRequest(method, url, bytes.NewReader(body))
			req.Header.Set(api.HeaderSidecarToken, testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s = %d %s", method, rec.Code, rec.Body)
			}
		}
		do(http.MethodPut, data)
		b.Run("put", func(b *testing.B) {
			for b.Loop() {
				do(http.MethodPut, data)
			}
		})
		b.Run("get", func(b *testing.B) {
			for b.Loop() {
				do(http.MethodGet, nil)
			}
		})
	})
}
