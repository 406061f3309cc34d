package servertest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// debFile is a file of a test package: its path in the root, mode and
// content.
type debFile struct {
	path string
	mode int64
	body string
}

// A debPkg is a binary package and its control file.
type debPkg struct {
	file, control string
	deb           []byte
}

// debPackage builds a binary package as dpkg-deb would: an ar archive of
// debian-binary, control.tar.gz (control, and the maintainer scripts
// given) and data.tar.gz.
func debPackage(t *testing.T, file, control string, scripts map[string]string, files []debFile) debPkg {
	t.Helper()
	ctl := []debFile{{"./control", 0o644, control}}
	for name, body := range scripts {
		ctl = append(ctl, debFile{"./" + name, 0o755, body})
	}
	var deb bytes.Buffer
	deb.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		data []byte
	}{{"debian-binary", []byte("2.0\n")}, {"control.tar.gz", tarGz(t, ctl)}, {"data.tar.gz", tarGz(t, files)}} {
		fmt.Fprintf(&deb, "%-16s%-12d%-6d%-6d%-8o%-10d`\n", m.name, 0, 0, 0, 0o100644, len(m.data))
		deb.Write(m.data)
		if len(m.data)%2 == 1 {
			deb.WriteByte('\n')
		}
	}
	return debPkg{file: file, control: control, deb: deb.Bytes()}
}

// tarGz packs files, with the directories above them, owned by root.
func tarGz(t *testing.T, files []debFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.Dir(f.path); d != "." && d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var sorted []string
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.path, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// aptRepo serves a flat apt repository of debs on loopback: Packages, an
// unsigned Release, the packages. It returns the server and an apt
// configuration directory whose only source is the repository under host
// (a name the test's resolver maps to loopback), trusted without a
// signature.
func aptRepo(t *testing.T, host string, debs ...debPkg) (*httptest.Server, string) {
	t.Helper()
	var packages strings.Builder
	for _, d := range debs {
		sha, md := sha256.Sum256(d.deb), md5.Sum(d.deb)
		fmt.Fprintf(&packages, "%sFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n\n",
			d.control, d.file, len(d.deb), hex.EncodeToString(md[:]), hex.EncodeToString(sha[:]))
	}
	index := []byte(packages.String())
	sum := sha256.Sum256(index)
	release := fmt.Sprintf("Origin: boxkite-test\nLabel: boxkite-test\nDate: %s\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123), hex.EncodeToString(sum[:]), len(index))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /Packages", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(index) })
	mux.HandleFunc("GET /Release", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(release)) })
	for _, d := range debs {
		mux.HandleFunc("GET /"+d.file, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(d.deb) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	conf := t.TempDir()
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":")+1:]
	src := fmt.Sprintf("deb [trusted=yes] http://%s:%s/ ./\n", host, port)
	if err := os.Mkdir(filepath.Join(conf, "sources.list.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "sources.list"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, conf
}
