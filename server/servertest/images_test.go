package servertest_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/cgosidecar"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/images"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
)

const imageMarker = "made-by-the-test"

// e2bHome is an E2B-style image's /home: the workspace is bound over
// its user directory.
var e2bHome = []tar.Header{
	{Name: "home/", Typeflag: tar.TypeDir, Mode: 0o755},
	{Name: "home/user/", Typeflag: tar.TypeDir, Mode: 0o755},
	{Name: "home/user/x/", Typeflag: tar.TypeDir, Mode: 0o755},
}

// hostRootLayer is a tar of a small root: the host's dash as /bin/sh, the
// libraries it needs, a marker file no host has, and home, the entries of
// its /home (a regular file holds its own name, a line). The sidecar brings its
// own loader (jail.LoaderDir).
func hostRootLayer(t *testing.T, home []tar.Header) []byte {
	t.Helper()
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Fatalf("the test needs dash: %v", err)
	}
	files := map[string]string{"/usr/bin/dash": dash}
	soPath := regexp.MustCompile(`(/\S+\.so[.\d]*)`)
	for _, bin := range []string{dash} {
		out, err := exec.Command("ldd", bin).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "not a dynamic executable") {
			t.Fatalf("ldd %s: %v %s", bin, err, out)
		}
		for _, m := range soPath.FindAllString(string(out), -1) {
			files[m] = m
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h *tar.Header, body []byte) {
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	dirs := map[string]bool{}
	mkdirs := func(p string) {
		var parts []string
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		for _, d := range parts {
			if !dirs[d] {
				dirs[d] = true
				write(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
			}
		}
	}
	for dst, src := range files {
		b, err := os.ReadFile(src) // follows links: the image gets real files
		if err != nil {
			t.Fatal(err)
		}
		mkdirs(dst)
		write(&tar.Header{Name: strings.TrimPrefix(dst, "/"), Typeflag: tar.TypeReg, Mode: 0o755}, b)
	}
	mkdirs("/usr/bin/x")
	write(&tar.Header{Name: "usr/bin/sh", Typeflag: tar.TypeSymlink, Linkname: "dash"}, nil)
	write(&tar.Header{Name: "bin", Typeflag: tar.TypeSymlink, Linkname: "usr/bin"}, nil)
	for _, h := range home {
		var body []byte
		if h.Typeflag == tar.TypeReg {
			body = []byte(h.Name + "\n")
		}
		write(&h, body)
	}
	mkdirs("/etc/x")
	write(&tar.Header{Name: "etc/boxkite-image-marker", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(imageMarker+"\n"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func imageArchive(t *testing.T, home []tar.Header) []byte {
	t.Helper()
	layerTar := hostRootLayer(t, home)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(nil, img, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportedImageBoots: an archive made here is imported over the API and
// a sandbox created from it sees the image's root, not the host's. The
// image's record and its use are in the store: after a restart the image
// is still completed and still refused deletion while the sandbox lives.
func TestImportedImageBoots(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.WithImages(t.TempDir()))

	resp, body := doRaw(t, s, s.APIKey, "POST", "/v1/images/import?label=tiny", bytes.NewReader(imageArchive(t, e2bHome)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("import: %d %s", resp.StatusCode, body)
	}
	var img api.Image
	mustJSON(t, body, &img)

	// Not ready yet, or never: a create must not boot the host instead.
	deadline := time.Now().Add(time.Minute)
	for img.Status != api.ImageCompleted {
		if img.Status == api.ImageFailed || time.Now().After(deadline) {
			t.Fatalf("image: %+v", img)
		}
		time.Sleep(50 * time.Millisecond)
		_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
		mustJSON(t, body, &img)
	}

	checkOtherTenant(t, s, img.ID)

	resp, body = do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: "img_000000000000000000000000"}, "")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "not found or not ready") {
		t.Errorf("create from a missing image: %d %s", resp.StatusCode, body)
	}

	resp, body = do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: img.ID}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustJSON(t, body, &sb)

	// Only dash's builtins exist: the host's cat and python3 must not.
	cmd := `read m < /etc/boxkite-image-marker && echo "$m"; command -v cat python3; echo ok`
	resp, body = do(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: cmd}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustJSON(t, body, &res)
	if want := imageMarker + "\nok\n"; res.Stdout != want || res.ExitCode != 0 {
		t.Errorf("exec = %q (exit %d, stderr %q), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}

	// E2B's home, the image's own /home/user, is the workspace
	cmd = `echo w > /workspace/w.txt && read h < /home/user/w.txt && echo "$h" && echo x > /home/user/x.txt && read x < /workspace/x.txt && echo "$x"`
	resp, body = do(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: cmd}, "")
	mustJSON(t, body, &res)
	if resp.StatusCode != http.StatusOK || res.Stdout != "w\nx\n" || res.ExitCode != 0 {
		t.Errorf("exec through /home/user = %d %q (exit %d, stderr %q), want w and x", resp.StatusCode, res.Stdout, res.ExitCode, res.Stderr)
	}

	s.Restart(t)
	_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
	var after api.Image
	mustJSON(t, body, &after)
	if after.Status != api.ImageCompleted {
		t.Errorf("image after a restart: %s", body)
	}
	resp, body = do(t, s, "DELETE", "/v1/images/"+img.ID, nil, "")
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), api.CodeImageInUse) {
		t.Errorf("delete an image in use: %d %s", resp.StatusCode, body)
	}
	deleteWithSnapshot(t, s, img.ID, sb.ID)
}

// deleteWithSnapshot: a snapshot of a sandbox booted from image keeps the
// image from deletion (its restore boots from it) after the sandbox is
// gone: 409 image_in_use naming the snapshot; once the snapshot is
// deleted, the image is.
func deleteWithSnapshot(t *testing.T, s *servertest.Server, image, sandbox string) {
	t.Helper()
	resp, body := do(t, s, "POST", "/v1/sandboxes/"+sandbox+"/snapshots", api.CreateSnapshotRequest{}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", resp.StatusCode, body)
	}
	var snap api.Snapshot
	mustJSON(t, body, &snap)
	if resp, body := do(t, s, "DELETE", "/v1/sandboxes/"+sandbox, nil, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete sandbox: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, s, "DELETE", "/v1/images/"+image, nil, "")
	var env struct{ Error api.Error }
	mustJSON(t, body, &env)
	if ae := env.Error; resp.StatusCode != http.StatusConflict || ae.Code != api.CodeImageInUse || !strings.Contains(ae.Hint, snap.ID) {
		t.Errorf("delete an image a snapshot needs: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, s, "DELETE", "/v1/snapshots/"+snap.ID, nil, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete snapshot: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, s, "DELETE", "/v1/images/"+image, nil, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete image: %d %s", resp.StatusCode, body)
	}
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// doRaw is do with a key and a body sent as it is.
func doRaw(t *testing.T, s *servertest.Server, key, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.BaseURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// TestBuiltImageHasPackage is acceptance 1: a declarative build installs
// an apt package the host lacks through the build's egress proxy, and
// sandboxes from the image have it while the host and its default image
// do not. The package is one the test builds (with a maintainer script
// writing to /etc), served from a flat apt repository on loopback that
// the build's apt is configured with (Sources.AptDir): no test reaches a
// Debian mirror.
func TestBuiltImageHasPackage(t *testing.T) {
	t.Parallel()
	const pkg = "boxkite-apt-probe"
	deb := debPackage(t, pkg+"_1.0_all.deb",
		"Package: "+pkg+"\nVersion: 1.0\nArchitecture: all\nMaintainer: boxkite tests <tests@example.invalid>\nDescription: a probe\n",
		map[string]string{"postinst": "#!/bin/sh\nset -e\necho configured-by-postinst > /etc/" + pkg + ".conf\n"},
		[]debFile{{"./usr/bin/" + pkg, 0o755, "#!/bin/sh\necho from the loopback apt repository; cat /etc/" + pkg + ".conf\n"}})
	repo, aptDir := aptRepo(t, "apt.test", deb)
	_, port, _ := net.SplitHostPort(repo.Listener.Addr().String())
	s := servertest.New(t, servertest.WithImages(t.TempDir(),
		images.WithSources(images.Sources{AptDir: aptDir}),
		images.WithProxy(&egress.Proxy{
			Resolver: testResolver{"apt.test": "127.0.0.1"},
			Permit:   func(a netip.Addr) bool { return a.Unmap().IsLoopback() },
		})))

	req := api.CreateImageRequest{Label: pkg, ImageSpec: api.ImageSpec{AptPackages: []string{pkg}}}
	resp, body := do(t, s, "POST", "/v1/images", req, "")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("build: %d %s", resp.StatusCode, body)
	}
	var img api.Image
	mustJSON(t, body, &img)

	// The same package twice is the same spec.
	req.AptPackages = []string{pkg, pkg}
	resp, body = do(t, s, "POST", "/v1/images", req, "")
	var again api.Image
	mustJSON(t, body, &again)
	if resp.StatusCode != http.StatusOK || again.ID != img.ID {
		t.Errorf("identical build: %d %s, want 200 with %s", resp.StatusCode, body, img.ID)
	}
	for _, bad := range []api.ImageSpec{{AptPackages: []string{"jq; rm -rf /"}}, {Base: "boxkite-rust", AptPackages: []string{"jq"}}, {}} {
		if resp, body := do(t, s, "POST", "/v1/images", api.CreateImageRequest{ImageSpec: bad}, ""); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("build %+v: %d %s, want 422", bad, resp.StatusCode, body)
		}
	}

	// Following the log returns once the build has ended.
	resp, logs := do(t, s, "GET", "/v1/images/"+img.ID+"/logs?follow=1", nil, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(logs), "apt-get") ||
		!strings.Contains(string(logs), "egress granted: apt.test:"+port+"\n") || !strings.Contains(string(logs), "egress allowed: apt.test:"+port) {
		t.Errorf("logs: %d %s", resp.StatusCode, logs)
	}
	_, body = do(t, s, "GET", "/v1/images/"+img.ID, nil, "")
	mustJSON(t, body, &img)
	if img.Status != api.ImageCompleted {
		t.Fatalf("image %+v\nlog:\n%s", img, logs)
	}
	// Its size is the files the build added (one small package), not the
	// host's system directories its rootfs overlays (issue 18).
	if img.SizeBytes <= 0 || img.SizeBytes > 200<<20 {
		t.Errorf("image size %d bytes; want what the package added, far below the host's /usr", img.SizeBytes)
	}

	run := func(imageID, command string) api.ExecResult {
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
	if res := run(img.ID, pkg); res.ExitCode != 0 || res.Stdout != "from the loopback apt repository\nconfigured-by-postinst\n" {
		t.Errorf("in the image: %+v", res)
	}
	if res := run("", "command -v "+pkg); res.ExitCode == 0 {
		t.Errorf("the host's default image has %s: %+v", pkg, res)
	}
	if _, err := exec.LookPath(pkg); err == nil {
		t.Errorf("the build installed %s on the host", pkg)
	}
}

// checkOtherTenant: another account cannot see, use, read the logs of or
// delete the image; it gets what a missing image gets.
func checkOtherTenant(t *testing.T, s *servertest.Server, id string) {
	t.Helper()
	acct := &model.Account{ID: model.NewID(), Email: "b-images@example.com", CreatedAt: time.Now()}
	if err := s.Store.CreateAccount(context.Background(), acct); err != nil {
		t.Fatal(err)
	}
	keyB := model.NewAPIKey()
	if err := s.Store.CreateAPIKey(context.Background(), &model.APIKey{
		ID: model.NewID(), AccountID: acct.ID, Hash: model.HashAPIKey(keyB), Prefix: keyB[:17], Role: model.RoleAdmin, CreatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	const missing = "img_ffffffffffffffffffffffff"
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/images/{id}"}, {"GET", "/v1/images/{id}/logs"}, {"DELETE", "/v1/images/{id}"},
	} {
		resp, body := doRaw(t, s, keyB, c.method, strings.ReplaceAll(c.path, "{id}", id), nil)
		_, none := doRaw(t, s, keyB, c.method, strings.ReplaceAll(c.path, "{id}", missing), nil)
		if resp.StatusCode != http.StatusNotFound || string(body) == "" {
			t.Errorf("B: %s %s = %d %s, want 404", c.method, c.path, resp.StatusCode, body)
		}
		// The answer names the id asked for, so the two are alike once
		// each id is replaced: nothing else of A's image shows.
		got := strings.ReplaceAll(stripRequestID(body), id, "ID")
		if want := strings.ReplaceAll(stripRequestID(none), missing, "ID"); got != want {
			t.Errorf("B: %s %s differs from a missing image:\n%s\n%s", c.method, c.path, got, want)
		}
	}
	if _, body := doRaw(t, s, keyB, "GET", "/v1/images", nil); strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("B's list: %s", body)
	}
	b, _ := json.Marshal(api.CreateSandboxRequest{ImageID: id})
	if resp, body := doRaw(t, s, keyB, "POST", "/v1/sandboxes", bytes.NewReader(b)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("B boots A's image: %d %s", resp.StatusCode, body)
	}
}

// stripRequestID drops the request id, which differs between any two answers.
func stripRequestID(body []byte) string {
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		return string(body)
	}
	env.Error.RequestID = ""
	b, _ := json.Marshal(env)
	return string(b)
}

// TestImageWithoutLibcBoots: an imported image with no libc at all (one
// static binary as /bin/sh, built here with CGO_ENABLED=0) boots, though
// `go build` with cgo links the sidecar against the host's glibc: the
// jail runs it with the host's loader (jail.LoaderDir), which the image
// never sees in its own directories. (servertest's sidecar is static, as
// released; this test builds a dynamically linked one.)
func TestImageWithoutLibcBoots(t *testing.T) {
	t.Parallel()
	dynamic := cgosidecar.Build(t)
	sh := filepath.Join(t.TempDir(), "sh")
	build := exec.Command("go", "build", "-o", sh, "./testdata/staticsh")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build static sh: %v\n%s", err, out)
	}
	shBytes, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	m, err := images.New(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, servertest.WithConfig(server.Config{Images: m}),
		servertest.WithDriverConfig(func(c *local.Config) { c.SidecarPath = dynamic }))

	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, e := range []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "bin/sh", Typeflag: tar.TypeReg, Mode: 0o755}, shBytes},
		{tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "etc/boxkite-image-marker", Typeflag: tar.TypeReg, Mode: 0o644}, []byte(imageMarker)},
	} {
		e.h.Size = int64(len(e.body))
		if err := tw.WriteHeader(&e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	// An OCI layout this time (TestImportedImageBoots sends docker's).
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	aw := tar.NewWriter(&archive)
	if err := aw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := m.Import(context.Background(), accountOf(t, s), "", &archive)
	if err != nil {
		t.Fatal(err)
	}
	m.Wait()
	resp, body := do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{ImageID: got.ID}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create from an image without libc: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustJSON(t, body, &sb)
	resp, body = do(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/exec", api.ExecRequest{Command: "hello"}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustJSON(t, body, &res)
	if want := "marker=" + imageMarker + "\ncmd=hello\n"; res.Stdout != want || res.ExitCode != 0 {
		t.Errorf("exec = %q (exit %d, stderr %q), want %q", res.Stdout, res.ExitCode, res.Stderr, want)
	}
}

// accountOf returns the id of the account s.APIKey belongs to.
func accountOf(t *testing.T, s *servertest.Server) string {
	t.Helper()
	_, body := do(t, s, "GET", "/v1/account", nil, "")
	var a api.Account
	mustJSON(t, body, &a)
	return a.ID
}

// TestImageHomeWithoutUser: an image whose /home holds other homes but no
// user directory, or is a symlink (relative or absolute), still gets
// /home/user, the workspace (E2B's SDKs work there), beside the image's
// own entries, which stay as the image has them and read-only. Before,
// such an image kept its /home whole and had no /home/user.
func TestImageHomeWithoutUser(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.WithImages(t.TempDir()))
	homes := func(dir string) []tar.Header {
		return []tar.Header{
			{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: dir + "/alice/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: dir + "/alice/.profile", Typeflag: tar.TypeReg, Mode: 0o644},
			{Name: dir + "/notes", Typeflag: tar.TypeReg, Mode: 0o644},
			{Name: dir + "/bob", Typeflag: tar.TypeSymlink, Linkname: "alice"},
		}
	}
	link := func(target string) []tar.Header {
		return append([]tar.Header{{Name: "var/", Typeflag: tar.TypeDir, Mode: 0o755}}, append(homes("var/home"),
			tar.Header{Name: "home", Typeflag: tar.TypeSymlink, Linkname: target})...)
	}
	for _, tc := range []struct {
		name, dir string // dir: where the image keeps its homes
		home      []tar.Header
	}{
		{"other homes", "home", homes("home")},
		{"a relative link", "var/home", link("var/home")},
		{"an absolute link", "var/home", link("/var/home")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img := importedImage(t, s, tc.home)
			// Only dash's builtins exist: globs list, read reads.
			cmd := `for f in /home/* /home/.[!.]*; do echo "$f"; done
read p < /home/alice/.profile && echo "$p"
read p < /home/bob/.profile && echo "$p"
read n < /home/notes && echo "$n"
echo w > /workspace/w && read w < /home/user/w && echo "$w"
echo u > /home/user/u && read u < /workspace/u && echo "$u"
(echo x > /home/alice/x) 2>/dev/null || echo alice read-only
(echo x > /home/y) 2>/dev/null || echo home read-only`
			res := execIn(t, s, img, cmd)
			want := strings.Join([]string{
				"/home/alice", "/home/bob", "/home/notes", "/home/user", "/home/.[!.]*",
				tc.dir + "/alice/.profile", tc.dir + "/alice/.profile", tc.dir + "/notes",
				"w", "u", "alice read-only", "home read-only",
			}, "\n") + "\n"
			if diff := cmp.Diff(want, res.Stdout); diff != "" || res.ExitCode != 0 {
				t.Errorf("exec: exit %d, stderr %q, stdout (-want +got):\n%s", res.ExitCode, res.Stderr, diff)
			}
		})
	}
}
