// Package e2bsdk runs E2B's real JavaScript SDKs (e2b and
// @e2b/code-interpreter, installed by .ci/run) against a boxkite server,
// for the tests of the E2B facade on both drivers: flows.mjs goes through
// every flow of issue 21's acceptance, bench.mjs compares the SDK with /v1
// (BENCHMARKS.md). It is test support, linked by tests only.
package e2bsdk

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// Env names a directory with node_modules holding the SDKs. Without it the
// tests that need them are skipped, except in CI, where that is a failure.
const Env = "BOXKITE_TEST_E2B_SDK"

// The SDK versions the facade is tested with.
var versions = map[string]string{"e2b": "2.51.0", "@e2b/code-interpreter": "2.8.0"}

//go:embed flows.mjs connect.mjs bench.mjs pause.mjs check.mjs
var scripts embed.FS

// Dir returns the SDK directory, skipping t (failing it in CI) without one.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(Env)
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; .ci/run installs the E2B SDK", Env)
		}
		t.Skipf("%s is not set", Env)
	}
	for pkg, want := range versions {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		if err != nil {
			t.Fatalf("%s: %v", Env, err)
		}
		var v struct{ Version string }
		if err := json.Unmarshal(b, &v); err != nil || v.Version != want {
			t.Fatalf("%s has %s %q, want %s", Env, pkg, v.Version, want)
		}
	}
	return dir
}

// Checks are what flows.mjs must report, one per flow of issue 21's first
// acceptance item (and the SDK's view of the second).
var Checks = []string{
	"create", "domain", "run.stdout", "run.stderr", "run.exitCode", "run.USER", "run.long-command",
	"user.known", "user.unknown-refused.run", "user.unknown-refused.list", "user.unknown-refused.write", "run.CommandExitError", "run.timeoutMs",
	"background.pid", "commands.list", "commands.connect", "commands.kill", "kill.ends", "kill.unknown",
	"disconnect.keeps-running", "stdin", "stdin.large", "stdin.without-refused",
	"files.write-read-text", "files.write-nested", "files.binary-5MiB", "files.list", "files.exists", "files.getInfo", "files.rename", "files.rename-missing",
	"files.makeDir", "files.makeDir-on-file", "files.backslash-refused", "files.list-depth", "files.list-order-mode", "files.remove", "files.remove-missing", "files.read-missing", "files.uploadUrl", "files.downloadUrl",
	"files.signedUrl-forged", "files.watchDir",
	"home.files", "home.list", "home.rename", "home.cwd-HOME", "home.errors-as-asked", "home.in-sandbox", "home.watchDir", "files.symlink", "getMetrics.cpu",
	"pty.echo", "pty.resize", "pty.size-refused", "pty.stdin-refused", "pty.resize-command-refused", "list.metadata", "list.metadata-none", "list.bad-query-400", "timeout.cut-to-maximum", "create.bad-timeout-400", "getInfo",
	"connect.new-process",
	"tenant.getInfo", "tenant.connect", "tenant.setTimeout", "tenant.kill", "tenant.list",
	"setTimeout.expires", "list.pages", "runCode.state", "runCode.empty", "runCode.language-trimmed", "runCode.stdout", "runCode.error", "runCode.envs", "runCode.envs-scoped", "runCode.contexts", "runCode.context-cwd", "runCode.context-missing-cwd", "runCode.context-traceback",
	"runCode.onStdout-streams", "runCode.timeoutMs", "runCode.interrupt-keeps-state",
	"kill", "kill.NotFoundError", "kill.commands-fail",
}

// Results is what flows.mjs reports besides its checks.
type Results struct {
	SandboxID     string // the main sandbox, killed at the end
	CodeSandboxID string // the code interpreter's
}

// Server is where the flows run: a control plane serving the E2B API at
// Base, an API key of one account, and one of another.
type Server struct {
	Base, Key, OtherKey string
	// Unjailed is set where the sandboxes' commands run on the host (the
	// kube tests' fake kubelet): /home/user is not theirs to look at.
	Unjailed bool
}

// RunFlows runs flows.mjs with the SDKs in sdk against srv, fails t for
// every check it did not pass, and returns its results. log is the
// server's log, shown when the script fails.
func RunFlows(t testing.TB, sdk string, srv Server, log func() string) Results {
	t.Helper()
	run := scriptDir(t, sdk)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "flows.mjs")
	cmd.Dir = run
	cmd.Env = append(os.Environ(), "E2B_API_URL="+srv.Base, "E2B_SANDBOX_URL="+srv.Base, "E2B_API_KEY="+srv.Key,
		"OTHER_API_KEY="+srv.OtherKey, "RUN_ID="+fmt.Sprint(time.Now().UnixNano()), "E2B_DOMAIN=boxkite.invalid")
	if srv.Unjailed {
		cmd.Env = append(cmd.Env, "FLOWS_UNJAILED=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("flows.mjs:\n%s%s", out, stderr.String())
	if err != nil {
		t.Fatalf("flows.mjs: %v\nserver log:\n%s", err, log())
	}
	var passed []string
	var res Results
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "ok "); ok {
			passed = append(passed, name)
		} else if strings.HasPrefix(sc.Text(), "{") {
			if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
				t.Fatalf("summary line: %v", err)
			}
		}
	}
	for _, want := range Checks {
		if !slices.Contains(passed, want) {
			t.Errorf("flows.mjs did not pass %s", want)
		}
	}
	return res
}

// PauseChecks are what pause.mjs must report (issue 22 through the SDK:
// pause and resume, snapshots, fork).
var PauseChecks = []string{
	"pause", "pause.again-false", "getInfo.paused", "list.paused", "list.running-without-paused", "list.default-both", "getMetrics.paused",
	"envd.paused-refused", "connect.resumes", "connect.endAt-not-shorter", "resume.counter-continues", "resume.files",
	"connect.running-200", "pause.filesystem", "getInfo.paused-filesystem", "resume.filesystem-files",
	"resume.filesystem-processes-ended", "kill.paused", "kill.paused-gone", "pause.unknown-NotFound",
	"autoPause.lifecycle", "autoPause.paused", "autoPause.resumes", "autoPauseMemory.not-supported",
	"snapshot.create", "snapshot.list", "snapshot.list-by-name", "snapshot.list-by-tag", "snapshot.restore", "snapshot.restore-envs", "snapshot.restore-by-name", "snapshot.delete", "snapshot.delete-again-false",
	"fork.count", "fork.files", "fork.isolated", "fork.unknown-NotFound",
}

// RunPause runs pause.mjs with the SDK in sdk against srv (Key only) and
// fails t for every check it did not pass. filesystemOnly is for a server
// that cannot keep a paused sandbox's memory (the kube driver): every
// pause keeps the files only, and the default pause must be refused.
func RunPause(t testing.TB, sdk string, srv Server, log func() string, filesystemOnly bool) {
	t.Helper()
	run := scriptDir(t, sdk)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "pause.mjs")
	cmd.Dir = run
	cmd.Env = append(os.Environ(), "E2B_API_URL="+srv.Base, "E2B_SANDBOX_URL="+srv.Base, "E2B_API_KEY="+srv.Key,
		"RUN_ID="+fmt.Sprint(time.Now().UnixNano()), "E2B_DOMAIN=boxkite.invalid")
	if srv.Unjailed {
		cmd.Env = append(cmd.Env, "FLOWS_UNJAILED=1")
	}
	checks := PauseChecks
	if filesystemOnly {
		cmd.Env = append(cmd.Env, "FILESYSTEM_ONLY=1")
		checks = slices.Clone(checks)
		checks[slices.Index(checks, "resume.counter-continues")] = "pause.memory-refused"
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("pause.mjs:\n%s%s", out, stderr.String())
	if err != nil {
		t.Fatalf("pause.mjs: %v\nserver log:\n%s", err, log())
	}
	for _, want := range checks {
		if !bytes.Contains(out, []byte("ok "+want+"\n")) {
			t.Errorf("pause.mjs did not pass %s", want)
		}
	}
}

// scriptDir writes the scripts to a directory beside the SDK's
// node_modules (ESM resolves packages from the script's directory up).
func scriptDir(t testing.TB, sdk string) string {
	t.Helper()
	run := t.TempDir()
	for _, f := range []string{"flows.mjs", "connect.mjs", "bench.mjs", "pause.mjs", "check.mjs"} {
		b, err := scripts.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(run, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return run
}

// CheckAudit checks acceptance 3 for what RunFlows did: each sandbox's
// audit log, read with the call the TUI's source makes (client.Log),
// verifies and holds the flows' operations, every entry marked as coming
// through E2B.
func CheckAudit(t testing.TB, c *client.Client, res Results) {
	t.Helper()
	ops := auditedOps(t, c, res.SandboxID)
	for _, want := range []string{"exec", "file_upload", "file_download", "stat", "ls", "make_dir", "move", "remove", "watch"} {
		if ops[want] == 0 {
			t.Errorf("sandbox %s: no %s entry in the audit log (have %v)", res.SandboxID, want, ops)
		}
	}
	if ops := auditedOps(t, c, res.CodeSandboxID); ops["interpreter_exec"] < 4 {
		t.Errorf("code interpreter sandbox: %d interpreter_exec entries, want at least 4 (have %v)", ops["interpreter_exec"], ops)
	}
}

func auditedOps(t testing.TB, c *client.Client, id string) map[string]int {
	t.Helper()
	var entries []api.LogEntry
	var page *api.LogPage
	for {
		var err error
		if page, err = c.Log(context.Background(), id, 500, len(entries)); err != nil {
			t.Fatalf("audit log of %s: %v", id, err)
		}
		entries = append(entries, page.Entries...)
		if len(page.Entries) == 0 || len(entries) >= page.Total {
			break
		}
	}
	if err := api.VerifyLog(entries, page.HeadSeq, page.HeadHash); err != nil {
		t.Errorf("audit log of %s does not verify: %v", id, err)
	}
	ops := map[string]int{}
	for _, e := range entries {
		ops[e.Operation]++
		var d struct{ Interface string }
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.Interface != "e2b" {
			t.Errorf("entry %s (%s) does not say it came through e2b: %s", e.ID, e.Operation, e.Detail)
		}
	}
	return ops
}

// OtherAccountKey signs up a second account on the server at base and
// returns an API key of it.
func OtherAccountKey(t testing.TB, base string) string {
	t.Helper()
	var tok api.TokenResponse
	if err := post(base, "", "/v1/auth/signup", api.Credentials{Email: "other@example.com", Password: "correct horse battery staple"}, &tok); err != nil {
		t.Fatalf("sign up a second account: %v", err)
	}
	var created api.APIKeyCreated
	if err := post(base, tok.AccessToken, "/v1/api-keys", api.CreateAPIKeyRequest{Name: "other"}, &created); err != nil {
		t.Fatalf("create the second account's key: %v", err)
	}
	return created.Key
}

func post(base, bearer, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
