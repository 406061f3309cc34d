package sidecar

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// churn runs each of the loops in its own goroutine until the test ends,
// each given its iteration number: the sandbox's processes changing files
// while a download reads them.
func churn(t *testing.T, loops ...func(i int)) {
	t.Helper()
	done := make(chan struct{})
	stopped := make(chan struct{}, len(loops))
	for _, loop := range loops {
		go func() {
			defer func() { stopped <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				loop(i)
			}
		}()
	}
	t.Cleanup(func() {
		close(done)
		for range loops {
			<-stopped
		}
	})
}

// rewrite truncates the file at path and writes a 7-byte counter to it, as
// `echo $i > n` does.
func rewrite(path string) func(int) {
	return func(i int) { _ = os.WriteFile(path, fmt.Appendf(nil, "%06d\n", i%1000000), 0o644) }
}

// readTar reads a whole archive, returning each regular file's content.
func readTar(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return out, fmt.Errorf("%s: %w", hdr.Name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			out[hdr.Name] = string(b)
		}
	}
}

// wholeCounter reports whether s is the counter empty (read between the
// truncate and the write) or whole.
func wholeCounter(s string) bool { return s == "" || len(s) == 7 && s[6] == '\n' }

// TestArchiveDownloadChurn downloads a directory whose files another
// process keeps changing: a counter rewritten in place, files created and
// removed, a file renamed over by versions of other sizes (an editor's
// atomic save), a directory created and removed. Every download must be a
// whole archive, with each file as one read saw it: before, a file
// removed or shrunk between the listing and its read cut the download
// mid-stream (a broken transfer where tar leaves the file out).
func TestArchiveDownloadChurn(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	dir := filepath.Join(fs.tmp, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	counter, saved := filepath.Join(dir, "counter"), filepath.Join(dir, "saved")
	rewrite(counter)(0)
	churn(t,
		rewrite(counter),
		func(i int) { // created and removed
			p := filepath.Join(dir, fmt.Sprintf("tmp%d", i%4))
			_ = os.WriteFile(p, []byte(strings.Repeat("x", i%100)), 0o644)
			_ = os.Remove(p)
		},
		func(i int) { // renamed over
			tmp := filepath.Join(dir, ".saved.tmp")
			_ = os.WriteFile(tmp, []byte(strings.Repeat("v", 1+i%3*50)), 0o644)
			_ = os.Rename(tmp, saved)
		},
		func(i int) { // a directory created and removed
			d := filepath.Join(dir, "d")
			_ = os.MkdirAll(d+"/e", 0o755)
			_ = os.WriteFile(d+"/e/f", []byte("f"), 0o644)
			_ = os.RemoveAll(d)
		},
	)
	for i := range 300 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fs.url+"/files/archive?path=/tmp/src", nil)
		req.Header = authHeader.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("download %d: GET /files/archive: %v", i, err)
		}
		files, err := readTar(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("download %d: GET /files/archive = %d, %v; want 200 and a whole archive", i, resp.StatusCode, err)
		}
		if got := files["counter"]; !wholeCounter(got) {
			t.Fatalf("download %d: counter = %q, want it empty or whole", i, got)
		}
		if got, ok := files["saved"]; ok && strings.Trim(got, "v") != "" {
			t.Fatalf("download %d: saved = %q, want one saved version", i, got)
		}
	}
}

// TestBundleRewritten reads a storage sync bundle of a small file another
// process keeps rewriting. Every bundle must be whole, the file as one
// read saw it: before, a file that held less at the read than at the stat
// cut the bundle, and the whole flush failed.
func TestBundleRewritten(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	counter := filepath.Join(fs.ws, "counter")
	rewrite(counter)(0)
	churn(t, rewrite(counter))
	body, err := json.Marshal(api.BundleRequest{Root: "/workspace", Paths: []string{"counter", "file"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, fs.url+"/files/bundle", bytes.NewReader(body))
		req.Header = authHeader.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("bundle %d: POST /files/bundle: %v", i, err)
		}
		files, err := readTar(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("bundle %d: POST /files/bundle = %d, %v; want 200 and a whole bundle", i, resp.StatusCode, err)
		}
		if got, ok := files["counter"]; ok && !wholeCounter(got) {
			t.Fatalf("bundle %d: counter = %q, want it empty or whole", i, got)
		}
		if got := files["file"]; got != "workspace file\n" {
			t.Fatalf("bundle %d: file = %q, want it whole", i, got)
		}
	}
}
