package npmtest_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/internal/npmtest"
)

func TestPackFile(t *testing.T) {
	for spec, want := range map[string]string{
		"cowsay@1.6.0":                    "cowsay-1.6.0.tgz",
		"@anthropic-ai/claude-code@2.1.0": "anthropic-ai-claude-code-2.1.0.tgz",
		"@scope/name@1.0.0-beta.1":        "scope-name-1.0.0-beta.1.tgz",
		"is-fullwidth-code-point@3.0.0":   "is-fullwidth-code-point-3.0.0.tgz",
	} {
		if got := npmtest.PackFile(spec); got != want {
			t.Errorf("PackFile(%q) = %q, want %q", spec, got, want)
		}
	}
}

// TestRealNPMInstalls: the real npm installs from the registry a package
// and a scoped dependency the test packs, checking their integrity, and
// fetches each tarball once; an unknown package is 404.
func TestRealNPMInstalls(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("npm is missing (.ci/run installs it)")
		}
		t.Skip("needs npm")
	}
	reg := npmtest.New(t)
	reg.Add(t, npmtest.Pack(t, map[string]string{
		"package.json": `{"name":"@boxkite-test/dep","version":"2.0.0","main":"index.js"}`,
		"index.js":     "module.exports = 'from the scoped dependency'\n",
	}))
	for _, v := range []string{"1.0.0", "1.1.0"} {
		reg.Add(t, npmtest.Pack(t, map[string]string{
			"package.json": `{"name":"boxkite-test-top","version":"` + v + `","dependencies":{"@boxkite-test/dep":"^2.0.0"}}`,
			"index.js":     "module.exports = require('@boxkite-test/dep')\n",
		}))
	}
	dir := t.TempDir()
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--prefix", dir,
		"--registry", reg.Server.URL+"/", "--cache", filepath.Join(dir, ".cache"), "boxkite-test-top")
	cmd.Env = append(os.Environ(), "npm_config_proxy=", "npm_config_https_proxy=", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	out, err := exec.Command("node", "-p", "require('"+dir+"/node_modules/boxkite-test-top') + ' ' + require('"+dir+"/node_modules/boxkite-test-top/package.json').version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "from the scoped dependency 1.1.0" {
		t.Errorf("installed package: %q, %v", out, err)
	}
	for _, p := range []string{"boxkite-test-top@1.1.0", "@boxkite-test/dep@2.0.0"} {
		if n := reg.Fetched(p); n != 1 {
			t.Errorf("%s fetched %d times, want 1", p, n)
		}
	}
	cmd = exec.Command(npm, "view", "--registry", reg.Server.URL+"/", "--cache", filepath.Join(dir, ".cache"), "boxkite-no-such-package")
	cmd.Env = append(os.Environ(), "npm_config_proxy=", "npm_config_https_proxy=", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "404") {
		t.Errorf("npm view of a missing package: %v\n%s", err, out)
	}
}

// TestAddDirReadsOnDemand: a directory's tarballs are read when their
// name is asked for, and only those whose file name can be that name's:
// a broken tarball of another package never fails a request, and
// "cowsay-plus-…" is not a version of cowsay.
func TestAddDirReadsOnDemand(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cowsay := npmtest.Pack(t, map[string]string{"package.json": `{"name":"cowsay","version":"1.6.0"}`})
	write("cowsay-1.6.0.tgz", cowsay)
	write("cowsay-plus-2.0.0.tgz", npmtest.Pack(t, map[string]string{"package.json": `{"name":"cowsay-plus","version":"2.0.0"}`}))
	write("scope-pkg-1.0.0-linux-x64.tgz", npmtest.Pack(t, map[string]string{"package.json": `{"name":"@scope/pkg","version":"1.0.0-linux-x64"}`}))
	write("broken-1.0.0.tgz", []byte("not a tarball"))
	reg := npmtest.New(t)
	reg.AddDir(t, dir)

	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(reg.Server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	var doc struct {
		Versions map[string]struct {
			Dist struct{ Tarball, Shasum, Integrity string }
		}
		DistTags map[string]string `json:"dist-tags"`
	}
	code, body := get("/cowsay")
	if err := json.Unmarshal(body, &doc); code != 200 || err != nil {
		t.Fatalf("GET /cowsay: %d %s", code, body)
	}
	if len(doc.Versions) != 1 || doc.DistTags["latest"] != "1.6.0" {
		t.Errorf("cowsay's versions: %s", body)
	}
	sum := sha1.Sum(cowsay)
	if d := doc.Versions["1.6.0"].Dist; d.Shasum != hex.EncodeToString(sum[:]) || !strings.HasPrefix(d.Integrity, "sha512-") {
		t.Errorf("cowsay's digests: %+v", d)
	}
	if code, got := get("/cowsay/-/cowsay-1.6.0.tgz"); code != 200 || !bytes.Equal(got, cowsay) {
		t.Errorf("the tarball: %d, %d bytes, want %d", code, len(got), len(cowsay))
	}
	if n := reg.Fetched("cowsay@1.6.0"); n != 1 {
		t.Errorf("fetched %d times, want 1", n)
	}
	if code, body := get("/@scope%2fpkg"); code != 200 || !strings.Contains(string(body), `"1.0.0-linux-x64"`) {
		t.Errorf("GET /@scope%%2fpkg: %d %s", code, body)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	if code, body := get("/broken"); code != 500 || !strings.Contains(string(body), "broken-1.0.0.tgz") {
		t.Errorf("GET /broken: %d %s; want 500 naming the file", code, body)
	}
}
