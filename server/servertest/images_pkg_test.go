package servertest_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/server/servertest"
)

// probeWheel is a pure-python wheel of package boxkite-probe 1.0, made
// here so the pip build needs no index but the test's own.
func probeWheel(t *testing.T) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"boxkite_probe/__init__.py", "VALUE = 'from the test index'\n"},
		{"boxkite_probe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: boxkite-probe\nVersion: 1.0\n"},
		{"boxkite_probe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: boxkite-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("boxkite_probe-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("boxkite_probe-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pipIndex serves a PEP 503 simple index holding the probe wheel.
func pipIndex(t *testing.T) *httptest.Server {
	t.Helper()
	whl := probeWheel(t)
	sum := sha256.Sum256(whl)
	const name = "boxkite_probe-1.0-py3-none-any.whl"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /simple/boxkite-probe/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, name, hex.EncodeToString(sum[:]), name)
	})
	mux.HandleFunc("GET /files/"+name, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(whl) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fallbackResolver answers for pypi.test and asks the system otherwise.
type fallbackResolver map[string]string

func (m fallbackResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// TestBuiltImageWithPipAndNPM: one build installs a pinned pip package
// and a pinned npm package; a sandbox from the image imports and runs
// them. No PyPI is reachable from here, so pip's index is one the test
// serves on loopback (a wheel it makes), named pypi.test and granted to
// the build like any configured index; npm uses the machine's registry.
// The build log shows the build's egress: only those hosts.
func TestBuiltImageWithPipAndNPM(t *testing.T) {
	t.Parallel()
	idx := pipIndex(t)
	_, port, _ := net.SplitHostPort(idx.Listener.Addr().String())
	s := servertest.New(t, servertest.WithImages(t.TempDir(),
		images.WithSources(images.Sources{AptDir: "/etc/apt", PipIndex: "http://pypi.test:" + port + "/simple"}),
		images.WithProxy(&egress.Proxy{
			Resolver: fallbackResolver{"pypi.test": "127.0.0.1"},
			Permit:   func(a netip.Addr) bool { return a.Unmap().IsLoopback() || images.MirrorAddr(a) },
		})))

	req := api.CreateImageRequest{ImageSpec: api.ImageSpec{
		PythonPackages: []string{"boxkite-probe==1.0"}, NPMPackages: []string{"semver==7.6.3"},
	}}
	resp, body := do(t, s, "POST", "/v1/images", req, "")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("build: %d %s", resp.StatusCode, body)
	}
	var img api.Image
	mustJSON(t, body, &img)
	_, logs := do(t, s, "GET", "/v1/images/"+img.ID+"/logs?follow=1", nil, "")
	_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
	mustJSON(t, body, &img)
	if img.Status != api.ImageCompleted {
		t.Fatalf("image %+v\nlog:\n%s", img, logs)
	}
	for _, want := range []string{"egress granted: pypi.test:" + port + ", registry.npmjs.org:443\n", "egress allowed: pypi.test:" + port} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the build log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(string(logs), "deb.debian.org") {
		t.Errorf("a build without apt packages was granted the apt hosts:\n%s", logs)
	}

	resp, body = do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: img.ID}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustJSON(t, body, &sb)
	cmd := `python3 -c 'import boxkite_probe; print(boxkite_probe.VALUE)' && semver 1.2.3 -i minor`
	resp, body = do(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: cmd}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustJSON(t, body, &res)
	if want := "from the test index\n1.3.0\n"; res.Stdout != want || res.ExitCode != 0 {
		t.Errorf("in the image: %q (exit %d, stderr %q), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
}
