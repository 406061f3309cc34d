package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// The web console's tools: Debian's chromium, and playwright-core in
// server/console/web/node_modules (.ci/run links it there).
const (
	chromiumEnv  = "BOXKITE_TEST_CHROMIUM"    // default /usr/bin/chromium
	artifactsEnv = "BOXKITE_TEST_ARTIFACTS"   // where screenshots go; default a new temporary directory, kept
	consoleWeb   = "../../server/console/web" // from this package's directory
)

// consoleTools returns node, the chromium binary and the web directory,
// skipping t when one is missing, and failing it instead under CI.
func consoleTools(t *testing.T) (node, chromium, web string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format+"; .ci/run installs it", args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	chromium = os.Getenv(chromiumEnv)
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("no chromium at %s (apt-get install chromium, or set %s)", chromium, chromiumEnv)
	}
	web, err = filepath.Abs(consoleWeb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed in %s (npm ci there)", web)
	}
	return node, chromium, web
}

// buildWithoutNode builds boxkite-server on a PATH with no node on it:
// every directory of PATH is mirrored by one of links to all it holds
// but node and npm, so the build keeps its C compiler (and its cache) and
// nothing of it can reach node. The console's assets must come from the
// embedded, committed build.
func buildWithoutNode(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	var path []string
	for i, dir := range filepath.SplitList(os.Getenv("PATH")) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		mirror := filepath.Join(root, "path", strconv.Itoa(i))
		if err := os.MkdirAll(mirror, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if n := e.Name(); n == "node" || n == "nodejs" || strings.HasPrefix(n, "npm") || strings.HasPrefix(n, "npx") || n == "corepack" {
				continue
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(mirror, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		path = append(path, mirror)
	}
	noNode := strings.Join(path, string(filepath.ListSeparator))
	lookNode := exec.Command("sh", "-c", "command -v node npm nodejs")
	lookNode.Env = []string{"PATH=" + noNode}
	if out, err := lookNode.Output(); err == nil || len(out) > 0 {
		t.Fatalf("node is still on the mirrored PATH: %s", out)
	}
	bin := filepath.Join(root, "boxkite-server")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+noNode)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build without node: %v\n%s", err, out)
	}
	t.Logf("built boxkite-server without node on PATH in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// TestConsoleInBrowser (issue 29, acceptance 1 to 3) builds boxkite-server
// with no node on PATH, runs it in local mode, and drives its console in
// Debian's chromium with Playwright (server/console/web/e2e/flow.mjs):
// sign in, create a sandbox, extend it by 30 minutes (and past the longest
// lifetime, refused with the API's hint), type `echo hi-from-ui` into its terminal and
// see the output, see the command in the live audit log as Enter is pressed,
// resize the terminal, paste more than a WebSocket frame the server
// takes into it, click it with mouse reporting on (bytes, not UTF-8), upload and download a file byte-exact, preview a
// web server of the sandbox, fork, pause and resume, API keys with an
// expiry (an expired one marked so), a read-only viewer
// who cannot type, another account's sandbox as the not-found page, phone
// width and the dark scheme, sign-out ending the terminal, destroy; with
// no request to another origin, no CSP violation and no script error.
// Screenshots of every page are logged. About 80 s on 2 cores, 20 of them
// the build.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds boxkite-server and starts real sandboxes and a browser")
	}
	node, chromium, web := consoleTools(t)
	bin := buildWithoutNode(t)
	stateDir, err := os.MkdirTemp("", "bxk-ui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	key := model.NewAPIKey()
	t.Setenv("BOXKITE_SERVER_TAKEOVER_RECORDING", "true") // the log page offers the recordings
	// No flush of typed bytes while the flow runs: the command reaches the
	// live log because Enter wrote it, whatever the machine's load
	// (log.live-on-enter in flow.mjs).
	t.Setenv("BOXKITE_SERVER_TAKEOVER_FLUSH_INTERVAL", "1h")
	srv := startServerBinary(t, bin, stateDir, key)
	if !strings.Contains(srv.out.String(), "web console at http://") {
		t.Errorf("the server does not announce its console:\n%s", srv.out.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The user signs up; the sandbox of another account (the local one)
	// must stay out of their reach.
	email, password := "ui@example.com", "correct horse battery"
	if _, err := call(ctx, srv.base, "", "POST", "/v1/auth/signup", api.Credentials{Email: email, Password: password}, nil); err != nil {
		t.Fatal(err)
	}
	var other api.Sandbox
	if _, err := call(ctx, srv.base, key, "POST", "/v1/sandboxes", api.CreateSandboxRequest{Label: "not-yours"}, &other); err != nil {
		t.Fatal(err)
	}

	artifacts := os.Getenv(artifactsEnv)
	if artifacts == "" {
		if artifacts, err = os.MkdirTemp("", "boxkite-console-e2e-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(map[string]string{
		"base": srv.base, "email": email, "password": password, "otherSandbox": other.ID,
		"artifacts": artifacts, "chromium": chromium,
	})
	cmd := exec.CommandContext(ctx, node, filepath.Join(web, "e2e", "flow.mjs"), string(arg))
	cmd.Dir = web
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	checks := map[string]bool{}
	done := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Check, Detail, Screenshot, Page, Error string
			OK, Done                               bool
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("flow.mjs printed %q", sc.Text())
			continue
		}
		switch {
		case line.Screenshot != "":
			t.Logf("screenshot of %s: %s", line.Page, line.Screenshot)
		case line.Check != "":
			checks[line.Check] = line.OK
			if !line.OK {
				t.Errorf("%s failed: %s", line.Check, line.Detail)
			} else if line.Detail != "" {
				t.Logf("%s: %s", line.Check, line.Detail)
			}
		case line.Error != "":
			t.Errorf("flow.mjs: %s", line.Error)
		case line.Done:
			done = true
		}
	}
	if runErr != nil || !done {
		t.Fatalf("flow.mjs: %v (done %v)\nstderr:\n%s\nserver:\n%s", runErr, done, stderr.String(), srv.out.String())
	}
	want := []string{
		"signin.redirect", "signin.keyboard", "signin.cookie", "signin.cookie-hidden", "create", "extend.adds", "extend.hint",
		"terminal.output", "log.live-on-enter", "log.expand", "terminal.resize", "terminal.paste-1mib", "terminal.mouse-bytes", "readonly.checkbox", "readonly.sees-others",
		"readonly.cannot-type", "terminal.keyboard-leaves", "files.byte-exact", "log.recording", "processes.listed", "preview.open", "preview.revoke", "fork", "fork.destroy", "pause", "pause.no-terminal", "resume", "page.snapshots", "page.secrets", "page.keys", "page.ssh-keys",
		"page.images", "page.volumes", "keys.default-expiry", "keys.create-expiry", "keys.expired-marked", "notfound.other-account/", "notfound.other-account/log",
		"notfound.other-account/terminal", "phone.sandboxes.no-overflow", "phone.sandbox.no-overflow",
		"phone.terminal.no-overflow", "color-scheme", "signout.ends-terminal", "signout.cookie-dead",
		"destroy.confirm-focus", "destroy.confirm-isolated", "destroy", "list.active-only", "list.show-destroyed", "no-third-party-origins", "no-csp-violations", "no-script-errors",
	}
	for _, c := range want {
		if _, ok := checks[c]; !ok {
			t.Errorf("flow.mjs did not report %s", c)
		}
	}
	for c := range checks {
		if !slices.Contains(want, c) {
			t.Errorf("flow.mjs reported %s, which this test does not know", c)
		}
	}
	t.Logf("screenshots and the downloaded file are in %s", artifacts)

	// The other account's sandbox is untouched.
	var still api.Sandbox
	if _, err := call(ctx, srv.base, key, "GET", "/v1/sandboxes/"+other.ID, nil, &still); err != nil || still.Status != api.StatusActive {
		t.Errorf("the other account's sandbox: %+v, %v", still, err)
	}
}
