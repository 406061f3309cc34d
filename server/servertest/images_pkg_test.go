package servertest_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/npmtest"
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

// testResolver resolves only the names a test serves on loopback: a
// build's proxy then reaches nothing else, whatever it is granted.
type testResolver map[string]string

func (m testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "not a test host", Name: host, IsNotFound: true}
}

// loopbackSources keeps images in dir and points builds at a pip index
// and an npm registry the test serves, as pypi.test and npm.test, letting
// the build proxy reach them (loopback) and nothing else.
func loopbackSources(dir string, idx *httptest.Server, reg *npmtest.Registry) servertest.Option {
	_, pipPort, _ := net.SplitHostPort(idx.Listener.Addr().String())
	return servertest.WithImages(dir,
		images.WithSources(images.Sources{
			AptDir: "/etc/apt", PipIndex: "http://pypi.test:" + pipPort + "/simple", NPMRegistry: "http://npm.test:" + reg.Port() + "/",
		}),
		images.WithProxy(&egress.Proxy{
			Resolver: testResolver{"pypi.test": "127.0.0.1", "npm.test": "127.0.0.1"},
			Permit:   func(a netip.Addr) bool { return a.Unmap().IsLoopback() },
		}))
}

// buildImage builds spec and returns the settled image and its log.
func buildImage(t *testing.T, s *servertest.Server, spec api.ImageSpec) (api.Image, string) {
	t.Helper()
	resp, body := do(t, s, "POST", "/v1/images", api.CreateImageRequest{ImageSpec: spec}, "")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("build: %d %s", resp.StatusCode, body)
	}
	var img api.Image
	mustJSON(t, body, &img)
	_, logs := do(t, s, "GET", "/v1/images/"+img.ID+"/logs?follow=1", nil, "")
	_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
	mustJSON(t, body, &img)
	return img, string(logs)
}

// execIn runs command in a new sandbox booted from image id.
func execIn(t *testing.T, s *servertest.Server, imageID, command string) api.ExecResult {
	t.Helper()
	resp, body := do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: imageID}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustJSON(t, body, &sb)
	resp, body = do(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: command}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustJSON(t, body, &res)
	return res
}

// TestBuiltImageWithPipAndNPM: one build installs a pinned pip package
// and a pinned npm package; a sandbox from the image imports and runs
// them. No registry is reached: pip's index is one the test serves on
// loopback (a wheel it makes), named pypi.test, and npm's a loopback
// registry of the tarballs .ci/run fetched, named npm.test, each granted
// to the build like any configured index. The build log shows the
// build's egress: only those hosts.
func TestBuiltImageWithPipAndNPM(t *testing.T) {
	t.Parallel()
	reg := npmtest.New(t)
	reg.AddDir(t, npmtest.Fixtures(t, "semver@7.6.3"))
	idx := pipIndex(t)
	_, pipPort, _ := net.SplitHostPort(idx.Listener.Addr().String())
	s := servertest.New(t, loopbackSources(t.TempDir(), idx, reg))

	img, logs := buildImage(t, s, api.ImageSpec{PythonPackages: []string{"boxkite-probe==1.0"}, NPMPackages: []string{"semver==7.6.3"}})
	if img.Status != api.ImageCompleted {
		t.Fatalf("image %+v\nlog:\n%s", img, logs)
	}
	for _, want := range []string{"egress granted: pypi.test:" + pipPort + ", npm.test:" + reg.Port() + "\n", "egress allowed: pypi.test:" + pipPort, "egress allowed: npm.test:" + reg.Port()} {
		if !strings.Contains(logs, want) {
			t.Errorf("the build log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "deb.debian.org") {
		t.Errorf("a build without apt packages was granted the apt hosts:\n%s", logs)
	}
	if n := reg.Fetched("semver@7.6.3"); n != 1 {
		t.Errorf("the loopback registry served semver %d times, want 1", n)
	}

	cmd := `python3 -c 'import boxkite_probe; print(boxkite_probe.VALUE)' && semver 1.2.3 -i minor`
	if res := execIn(t, s, img.ID, cmd); res.Stdout != "from the test index\n1.3.0\n" || res.ExitCode != 0 {
		t.Errorf("in the image: %q (exit %d, stderr %q)", res.Stdout, res.ExitCode, res.Stderr)
	}
}

// scriptProbe is a package whose postinstall script records, in its own
// directory, the user namespace it ran in and whether it saw the host's
// /etc/shadow: the proof that install scripts run, and run jailed.
func scriptProbe(t *testing.T) []byte {
	return npmtest.Pack(t, map[string]string{
		"package.json": `{"name":"boxkite-script-probe","version":"1.0.0","bin":{"boxkite-script-probe":"bin.js"},` +
			`"scripts":{"postinstall":"cat /proc/self/uid_map > ran-in; if test -e /etc/shadow; then echo shadow-visible; else echo shadow-hidden; fi >> ran-in"}}`,
		"bin.js": "#!/usr/bin/env node\nconsole.log(require('fs').readFileSync(__dirname + '/ran-in', 'utf8').trim().split(/\\s+/).join(' '))\n",
	})
}

// TestBuildRunsInstallScripts is issue 18's acceptance 3: an npm build
// runs its packages' install scripts, in a jail (a user namespace that
// maps the build's root to an unprivileged host range), and a sandbox
// from the image runs what it installed: cowsay 1.6.0, and a package of
// the test's own whose postinstall writes a file. What the build wrote is
// owned by canonical ids (the jail's own, root's files by 0 on disk), so
// any sandbox's range can use the image.
func TestBuildRunsInstallScripts(t *testing.T) {
	t.Parallel()
	reg := npmtest.New(t)
	reg.AddDir(t, npmtest.Fixtures(t, "cowsay@1.6.0"))
	reg.Add(t, scriptProbe(t))
	dir := t.TempDir()
	s := servertest.New(t, loopbackSources(dir, pipIndex(t), reg))

	img, logs := buildImage(t, s, api.ImageSpec{NPMPackages: []string{"cowsay==1.6.0", "boxkite-script-probe==1.0.0"}})
	if img.Status != api.ImageCompleted {
		t.Fatalf("image %+v\nlog:\n%s", img, logs)
	}
	res := execIn(t, s, img.ID, "cowsay hi && boxkite-script-probe")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "< hi >") {
		t.Fatalf("cowsay in the image: %+v", res)
	}
	probe := strings.Fields(res.Stdout[strings.LastIndex(strings.TrimSpace(res.Stdout), "\n")+1:])
	if len(probe) != 4 || probe[0] != "0" || probe[1] == "0" {
		t.Errorf("the postinstall script saw %q, want a uid map of the jail's root to an unprivileged host id", probe)
	}
	if _, err := os.Stat("/etc/shadow"); err == nil && (len(probe) != 4 || probe[3] != "shadow-hidden") {
		t.Errorf("the postinstall script saw %q, want the host's /etc/shadow hidden", probe)
	}
	// Canonical ids on disk: the jail's root wrote root's files.
	pkgJSON := filepath.Join(dir, img.ID, "upper/usr/local/lib/node_modules/cowsay/package.json")
	fi, err := os.Stat(pkgJSON)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
		t.Errorf("%s is owned by %d:%d on disk, want 0:0", pkgJSON, st.Uid, st.Gid)
	}
}

// TestBuildRefusesMisbehavingScripts is the rest of acceptance 3: a
// package whose install script writes outside the image's directories,
// or connects to a host that is not a package source, fails the build
// with a stable code and a hint, and the attempt is in the image's audit
// log (the egress refusal, the failure). The host the script aims at is a
// listener of the test's on the host's loopback, reachable through the
// build proxy if it allowed it (evil.test resolves there): it never gets
// a connection, directly or through the proxy.
func TestBuildRefusesMisbehavingScripts(t *testing.T) {
	t.Parallel()
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(target.Addr().String())
	escape := "/boxkite-escape-" + port
	reg := npmtest.New(t)
	reg.Add(t, npmtest.Pack(t, map[string]string{
		"package.json": `{"name":"boxkite-writes-outside","version":"1.0.0","scripts":{"postinstall":"node install.js"}}`,
		"install.js":   `require('fs').writeFileSync('` + escape + `', 'escaped')` + "\n",
	}))
	reg.Add(t, npmtest.Pack(t, map[string]string{
		"package.json": `{"name":"boxkite-phones-home","version":"1.0.0","scripts":{"postinstall":"node install.js"}}`,
		// Straight to the host's loopback port, then through the proxy.
		"install.js": `const net = require('net')
net.connect(` + port + `, '127.0.0.1').on('error', e => console.log('direct: ' + e.code))
const s = net.connect(3128, '127.0.0.1', () => s.write('CONNECT evil.test:` + port + ` HTTP/1.1\r\nHost: evil.test:` + port + `\r\n\r\n'))
s.on('data', b => { console.log('proxy: ' + String(b).split('\r\n')[0]); process.exit(String(b).startsWith('HTTP/1.1 200') ? 0 : 3) })
s.on('error', e => { console.log('proxy: ' + e.message); process.exit(4) })
`,
	}))
	_, pipPort, _ := net.SplitHostPort(pipIndex(t).Listener.Addr().String())
	s := servertest.New(t, servertest.WithImages(t.TempDir(),
		images.WithSources(images.Sources{AptDir: "/etc/apt", PipIndex: "http://pypi.test:" + pipPort + "/simple", NPMRegistry: "http://npm.test:" + reg.Port() + "/"}),
		images.WithProxy(&egress.Proxy{
			Resolver: testResolver{"npm.test": "127.0.0.1", "evil.test": "127.0.0.1"},
			Permit:   func(a netip.Addr) bool { return a.Unmap().IsLoopback() },
		})))

	for _, tc := range []struct {
		pkg, code, reason string
		denied            bool // an egress_deny entry for evil.test
	}{
		{"boxkite-writes-outside==1.0.0", api.CodeImageBuildWriteRefused, escape, false},
		{"boxkite-phones-home==1.0.0", api.CodeImageBuildEgressRefused, "evil.test:" + port, true},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			img, logs := buildImage(t, s, api.ImageSpec{NPMPackages: []string{tc.pkg}})
			if img.Status != api.ImageFailed || img.FailureCode != tc.code || img.FailureHint == "" || !strings.Contains(img.FailureReason, tc.reason) {
				t.Errorf("image %+v, want failed with %s mentioning %q and a hint\nlog:\n%s", img, tc.code, tc.reason, logs)
			}
			if tc.denied && !strings.Contains(img.FailureHint, "boxkite images audit "+img.ID) {
				t.Errorf("hint %q does not say where the attempts are recorded", img.FailureHint)
			}
			resp, body := do(t, s, "GET", "/v1/images/"+img.ID+"/log", nil, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("audit log: %d %s", resp.StatusCode, body)
			}
			var page api.LogPage
			mustJSON(t, body, &page)
			if err := api.VerifyLogChain(api.GenesisHash, page.Entries); err != nil {
				t.Errorf("the build's audit chain: %v", err)
			}
			var denied, failed bool
			for _, e := range page.Entries {
				var d map[string]any
				_ = json.Unmarshal(e.Detail, &d)
				if e.SessionID != img.ID || e.Source != api.LogSourceImageBuild || d["image"] != img.ID {
					t.Errorf("entry %+v is not the build's", e)
				}
				denied = denied || (e.Operation == "egress_deny" && d["host"] == "evil.test")
				failed = failed || (e.Operation == "image_build_failed" && d["code"] == tc.code)
			}
			if denied != tc.denied || !failed {
				t.Errorf("audit log: egress_deny of evil.test %v (want %v), image_build_failed with %s %v:\n%s", denied, tc.denied, tc.code, failed, body)
			}
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's listener got %d connections from builds", n)
	}
	if _, err := os.Lstat(escape); err == nil {
		t.Errorf("a build wrote %s on the host", escape)
	}
}

// TestBuildTimeout: a package whose install script never ends is stopped
// at the build's time limit, jail and script with it, and the build fails
// saying so: a hung build holds no build slot for good.
func TestBuildTimeout(t *testing.T) {
	t.Parallel()
	reg := npmtest.New(t)
	reg.Add(t, npmtest.Pack(t, map[string]string{
		"package.json": `{"name":"boxkite-hangs","version":"1.0.0","scripts":{"postinstall":"sleep 3600"}}`,
	}))
	_, pipPort, _ := net.SplitHostPort(pipIndex(t).Listener.Addr().String())
	s := servertest.New(t, servertest.WithImages(t.TempDir(),
		images.WithSources(images.Sources{AptDir: "/etc/apt", PipIndex: "http://pypi.test:" + pipPort + "/simple", NPMRegistry: "http://npm.test:" + reg.Port() + "/"}),
		images.WithProxy(&egress.Proxy{
			Resolver: testResolver{"npm.test": "127.0.0.1"},
			Permit:   func(a netip.Addr) bool { return a.Unmap().IsLoopback() },
		}),
		images.WithBuildTimeout(5*time.Second)))
	img, logs := buildImage(t, s, api.ImageSpec{NPMPackages: []string{"boxkite-hangs==1.0.0"}})
	if img.Status != api.ImageFailed || img.FailureCode != api.CodeImageBuildFailed || !strings.Contains(img.FailureReason, "longer than 5s") || img.FailureHint == "" {
		t.Errorf("image %+v, want failed for running too long\nlog:\n%s", img, logs)
	}
	// The jail was killed, the script with it.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && string(b) == "sleep\x003600\x00" {
			t.Errorf("the hung script still runs: %s", p)
		}
	}
}
