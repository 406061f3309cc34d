package sidecar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func TestRawRoundTrip(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	data := make([]byte, 3<<20+17)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	st, b := call(t, http.MethodPut, fs.url+"/files/raw?path=/tmp/new/dirs/blob.bin", authHeader, string(data))
	var put api.FileWriteResult
	if err := json.Unmarshal(b, &put); st != 200 || err != nil {
		t.Fatalf("PUT /files/raw = %d %s", st, b)
	}
	if want := (api.FileWriteResult{Path: "/tmp/new/dirs/blob.bin", Size: int64(len(data))}); put != want {
		t.Errorf("PUT /files/raw = %+v, want %+v", put, want)
	}
	if got, err := os.ReadFile(fs.tmp + "/new/dirs/blob.bin"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("stored file differs from what was sent (%v)", err)
	}
	if fi, _ := os.Stat(fs.tmp + "/new/dirs/blob.bin"); fi.Mode() != 0o644 {
		t.Errorf("new file mode %v, want 0644", fi.Mode())
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fs.url+"/files/raw?path=/tmp/new/dirs/blob.bin", nil)
	req.Header = authHeader.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Errorf("GET /files/raw = %d, %d bytes, %v; want 200 and the %d bytes sent", resp.StatusCode, len(got), err, len(data))
	}
	if resp.ContentLength != int64(len(data)) || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("GET /files/raw headers: length %d, type %q", resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	errs := []struct {
		method, query string
		wantStatus    int
		wantMsg       string
	}{
		{"GET", "?path=missing", 404, "File not found: missing"},
		{"GET", "?path=sub", 400, "Path is a directory"},
		{"GET", "", 400, "query parameter path is required"},
		{"PUT", "?path=sub", 400, "Path is a directory"},
		{"PUT", "?path=file/below", 400, "not a directory"},
	}
	for _, tt := range errs {
		st, b := call(t, tt.method, fs.url+"/files/raw"+tt.query, authHeader, "x")
		wantError(t, tt.method+" /files/raw"+tt.query, st, b, tt.wantStatus, tt.wantMsg)
	}
}

// tarEntry is one entry of a hand-built archive.
type tarEntry struct {
	name, body, link string
	typ              byte // 0 means a regular file
	mode             int64
}

func tarOf(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0)}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil && hdr.Size > 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// snapshot describes a tree: per relative path its type, mode, content or
// link target, and mtime to the second.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += " " + string(b) + " " + fi.ModTime().Round(time.Second).UTC().String()
		default:
			desc += " " + fi.ModTime().Round(time.Second).UTC().String()
		}
		out[strings.TrimPrefix(p, dir+"/")] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRawDownloadRewritten reads a small file that another process keeps
// rewriting (truncate, then write: `echo $i > n`), as TestE2BPause reads its
// counter. Every read must answer 200 with the file as one read saw it,
// empty or whole, never a connection dropped because the file held less at
// the read than at the open (which the control plane reports as a sidecar
// it cannot reach).
func TestRawDownloadRewritten(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	path := fs.tmp + "/counter"
	if err := os.WriteFile(path, []byte("000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			_ = os.WriteFile(path, fmt.Appendf(nil, "%06d\n", i%1000000), 0o644)
		}
	}()
	defer func() { close(done); <-stopped }()
	for i := range 2000 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fs.url+"/files/raw?path=/tmp/counter", nil)
		req.Header = authHeader.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("read %d: GET /files/raw: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d: GET /files/raw = %d %q, %v; want 200", i, resp.StatusCode, got, err)
		}
		if resp.ContentLength != int64(len(got)) || (len(got) != 0 && len(got) != 7) {
			t.Fatalf("read %d: GET /files/raw = %q (length %d); want the file empty or whole", i, got, resp.ContentLength)
		}
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	src := fs.ws + "/src"
	random := make([]byte, 1<<20)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	writeFile(t, src+"/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, src+"/private", "p", 0o600)
	writeFile(t, src+"/empty", "", 0o644)
	writeFile(t, src+"/a/b/c/deep.bin", string(random), 0o644)
	for _, d := range []string{src + "/emptydir", src + "/a/b/emptier"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(src+"/a/b/emptier", 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"link": "a/b/c/deep.bin", "dirlink": "a/b", "a/up": "../run.sh", "abs": "/workspace/src/run.sh"} {
		if err := os.Symlink(target, src+"/"+name); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{src + "/run.sh", src + "/emptydir", src + "/a/b"} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	want := snapshot(t, src)
	for _, tt := range []struct{ query, dest string }{{"", "/workspace/dst"}, {"&gzip=1", "/tmp/dst"}} {
		st, archive := call(t, http.MethodGet, fs.url+"/files/archive?path=src"+tt.query, authHeader, "")
		if st != 200 {
			t.Fatalf("GET /files/archive%s = %d %s", tt.query, st, archive)
		}
		if gz := len(archive) > 2 && archive[0] == 0x1f && archive[1] == 0x8b; gz != (tt.query != "") {
			t.Errorf("GET /files/archive%s: gzip %v", tt.query, gz)
		}
		st, b := call(t, http.MethodPost, fs.url+"/files/archive?path="+tt.dest, authHeader, string(archive))
		var got api.ArchiveResult
		if err := json.Unmarshal(b, &got); st != 200 || err != nil {
			t.Fatalf("POST /files/archive = %d %s", st, b)
		}
		if wantRes := (api.ArchiveResult{Files: 4, Bytes: int64(len(random) + 18 + 1)}); got != wantRes {
			t.Errorf("POST /files/archive = %+v, want %+v", got, wantRes)
		}
		host := fs.ws + "/dst"
		if tt.dest == "/tmp/dst" {
			host = fs.tmp + "/dst"
		}
		if diff := cmp.Diff(want, snapshot(t, host)); diff != "" {
			t.Errorf("tree after a round trip via %s (-want +got):\n%s", tt.dest, diff)
		}
	}
}

func TestArchiveRefusals(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	if err := os.MkdirAll(fs.ws+"/dst/in", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		archive []byte
		wantMsg string
	}{
		{"dot-dot", tarOf(t, tarEntry{name: "../x", body: "pwned"}), `"../x" contains ".."`},
		{"dot-dot inside", tarOf(t, tarEntry{name: "in/../../x", body: "pwned"}), `contains ".."`},
		{"absolute", tarOf(t, tarEntry{name: "/abs", body: "pwned"}), `"/abs" is absolute`},
		{"symlink out of the roots", tarOf(t, tarEntry{name: "evil", typ: tar.TypeSymlink, link: "/etc"}), `"evil" is a symlink to "/etc", outside the allowed roots`},
		{"relative symlink out", tarOf(t, tarEntry{name: "evil", typ: tar.TypeSymlink, link: "../../outside"}), "outside the allowed roots"},
		{"symlink then write through", tarOf(t,
			tarEntry{name: "up", typ: tar.TypeSymlink, link: ".."},
			tarEntry{name: "up/x", body: "pwned"}), `"up/x" escapes the destination directory`},
		{"symlink through an earlier link", tarOf(t, tarEntry{name: "l2", typ: tar.TypeSymlink, link: "up/../outside"}), `"l2" is a symlink to "up/../outside", outside the allowed roots`},
		{"symlink into a root then write through", tarOf(t,
			tarEntry{name: "t", typ: tar.TypeSymlink, link: "/tmp"},
			tarEntry{name: "t/x", body: "pwned"}), `"t/x" escapes the destination directory`},
		{"planted symlink", tarOf(t, tarEntry{name: "planted/x", body: "pwned"}), `"planted/x" escapes the destination directory`},
		{"hard link out", tarOf(t, tarEntry{name: "h", typ: tar.TypeLink, link: "../file"}), "invalid name"},
		{"garbage", []byte(strings.Repeat("not a tar ", 100)), "invalid archive"},
		{"broken gzip", []byte{0x1f, 0x8b, 0, 0}, "invalid archive"},
	}
	if err := os.Symlink(fs.tmp, fs.ws+"/dst/planted"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		st, b := call(t, http.MethodPost, fs.url+"/files/archive?path=dst", authHeader, string(tt.archive))
		wantError(t, tt.name, st, b, 400, tt.wantMsg)
	}
	for _, p := range []string{fs.ws + "/x", fs.tmp + "/x", fs.base + "/x"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if des, _ := os.ReadDir(fs.outside); len(des) != 1 {
		t.Errorf("outside holds %d entries, want 1", len(des))
	}
	// Accepted: a link inside, setuid bits stripped, a FIFO skipped.
	st, b := call(t, http.MethodPost, fs.url+"/files/archive?path=ok", authHeader, string(tarOf(t,
		tarEntry{name: "suid", body: "x", mode: 0o4755},
		tarEntry{name: "l", typ: tar.TypeSymlink, link: "suid"},
		tarEntry{name: "h", typ: tar.TypeLink, link: "suid"},
		tarEntry{name: "fifo", typ: tar.TypeFifo},
	)))
	if st != 200 {
		t.Fatalf("POST /files/archive = %d %s", st, b)
	}
	if fi, err := os.Stat(fs.ws + "/ok/suid"); err != nil || fi.Mode() != 0o755 {
		t.Errorf("suid entry has mode %v (%v), want 0755", fi.Mode(), err)
	}
	if _, err := os.Lstat(fs.ws + "/ok/fifo"); err == nil {
		t.Errorf("a FIFO was extracted")
	}
}

func TestArchiveGzipUpload(t *testing.T) {
	t.Parallel()
	fs := newFileServer(t, Options{})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(tarOf(t, tarEntry{name: "./d/", typ: tar.TypeDir, mode: 0o755}, tarEntry{name: "./d/f", body: "zipped"}))
	zw.Close()
	st, b := call(t, http.MethodPost, fs.url+"/files/archive?path=/outputs", authHeader, buf.String())
	if st != 200 || readFile(t, fs.outputs+"/d/f") != "zipped" {
		t.Errorf("POST tar.gz = %d %s", st, b)
	}
}

// FuzzArchiveEntryName extracts one-entry archives with any name, type and
// link target into a destination and checks that nothing appeared outside
// it, and that every symlink made points inside the roots.
func FuzzArchiveEntryName(f *testing.F) {
	for _, s := range []struct {
		name, link string
		typ        byte
	}{
		{"a", "", tar.TypeReg},
		{"../x", "", tar.TypeReg},
		{"/abs", "", tar.TypeReg},
		{"a/b/c", "", tar.TypeDir},
		{"l", "/etc", tar.TypeSymlink},
		{"l", "..", tar.TypeSymlink},
		{"l", "../../outside", tar.TypeSymlink},
		{"l", "up/../outside", tar.TypeSymlink},
		{"l", "0/../..", tar.TypeSymlink},
		{"0", "0", tar.TypeSymlink},
		{"planted/x", "", tar.TypeReg},
		{"h", "../file", tar.TypeLink},
		{"./", "", tar.TypeDir},
		{"a\\..\\..\\x", "", tar.TypeReg},
	} {
		f.Add(s.name, s.link, s.typ)
	}
	tr := plantTree(f)
	dest := tr.ws + "/dst"
	if err := os.MkdirAll(dest, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(tr.tmp, dest+"/planted"); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("..", dest+"/up"); err != nil {
		f.Fatal(err)
	}
	h := tr.handler()
	f.Fuzz(func(t *testing.T, name, link string, typ byte) {
		before := snapshotOutside(t, tr.base, dest)
		v, err := h.openView()
		if err != nil {
			t.Fatal(err)
		}
		defer v.close()
		dst, err := v.resolve("/workspace/dst", false)
		if err != nil || !dst.isDir() {
			t.Fatalf("resolve the destination: %v", err)
		}
		defer dst.close()
		x := &extractor{v: v, dest: dst.cur}
		defer x.close()
		hdr := &tar.Header{Name: name, Linkname: link, Typeflag: typ, Mode: 0o644, Size: 1}
		if x.entry(hdr, strings.NewReader("x")) == nil {
			x.finish()
			if err := x.sync(); err != nil {
				t.Fatalf("sync after entry %q: %v", name, err)
			}
		}
		if diff := cmp.Diff(before, snapshotOutside(t, tr.base, dest)); diff != "" {
			t.Fatalf("entry %q (type %q, link %q) changed things outside the destination (-before +after):\n%s", name, typ, link, diff)
		}
		_ = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink == 0 || p == dest+"/planted" || p == dest+"/up" {
				return nil
			}
			// What the kernel makes of it now: nowhere (dangling, a loop) or inside.
			if real, err := filepath.EvalSymlinks(p); err == nil && !inside(real, tr.ws) && !inside(real, tr.tmp) &&
				!inside(real, tr.outputs) && !inside(real, tr.uploads) && !inside(real, tr.skills) {
				t.Fatalf("entry %q made a symlink %s to %q, which leads to %s", name, p, mustReadlink(t, p), real)
			}
			return nil
		})
		for _, p := range []string{dest, tr.tmp} { // start the next input from a clean slate
			des, _ := os.ReadDir(p)
			for _, de := range des {
				if de.Name() != "planted" && de.Name() != "up" {
					_ = os.RemoveAll(filepath.Join(p, de.Name()))
				}
			}
		}
	})
}

// snapshotOutside lists every path under base but below skip, and tmp is
// included: the planted link leads there.
func snapshotOutside(t *testing.T, base, skip string) []string {
	var out []string
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if p == skip {
			return fs.SkipDir
		}
		out = append(out, p)
		return nil
	})
	return out
}

func mustReadlink(t *testing.T, p string) string {
	l, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// FuzzUploadPath: an upload's ?path= is taken only when it is there and
// is UTF-8, unchanged; anything else is a 400 with a hint.
func FuzzUploadPath(f *testing.F) {
	for _, s := range []string{"/workspace/a", "", "a%FFb", "%C3", "%E2%82%AC", "x%00y", "%ED%A0%80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r, err := http.NewRequest(http.MethodPut, "http://sidecar/files/raw", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.URL.RawQuery = "path=" + query
		want := r.URL.Query().Get("path")
		p, err := uploadPath(r)
		if err != nil {
			e, ok := errors.AsType[*api.Error](err)
			if !ok || e.Status != http.StatusBadRequest || e.Hint == "" {
				t.Fatalf("uploadPath(%q) = %v, want a 400 with a hint", query, err)
			}
			if want != "" && utf8.ValidString(want) {
				t.Fatalf("uploadPath(%q) refused the UTF-8 path %q: %v", query, want, err)
			}
			return
		}
		if p != want || p == "" || !utf8.ValidString(p) {
			t.Fatalf("uploadPath(%q) = %q, want %q, non-empty UTF-8", query, p, want)
		}
	})
}
