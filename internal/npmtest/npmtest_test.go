package npmtest_test

import (
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
