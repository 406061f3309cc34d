package cli

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/handoff/handofftest"
)

// handoffEnv installs the fixtures and makes them this process's home and
// working directory, with one credential in the environment.
func handoffEnv(t *testing.T) *handofftest.Fixture {
	t.Helper()
	isolate(t)
	fx := handofftest.Install(t)
	for k, v := range map[string]string{
		"HOME": fx.Home, "BOXKITE_OPENCODE": fx.Opencode, "ANTHROPIC_API_KEY": "sk-dry-run-secret",
		"CLAUDE_CODE_OAUTH_TOKEN": "", "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "", "OPENAI_API_KEY": "",
		"CODEX_API_KEY": "", "CODEX_ACCESS_TOKEN": "", "XDG_DATA_HOME": "", "GEMINI_API_KEY": "",
		"GOOGLE_API_KEY": "", "GEMINI_CLI_HOME": "",
	} {
		t.Setenv(k, v)
	}
	t.Chdir(fx.Src)
	return fx
}

func TestHandoffDryRun(t *testing.T) {
	handoffEnv(t)
	r := runCLI(t, "", "handoff", "claude-code", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := handofftest.ClaudeSession
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^session: +` + id + `$`),
		regexp.MustCompile(`(?m)^tree: .*my_app\.v2 -> /workspace/my_app\.v2 \(\d+ files, `),
		regexp.MustCompile(`(?m)^  [0-9.]+[KMG]?i?B +/workspace/\.claude/projects/-workspace-my-app-v2/` + id + `\.jsonl +<- /`),
		regexp.MustCompile(`(?m)^credentials: ANTHROPIC_API_KEY \(from environment\)`),
		regexp.MustCompile(`(?m)^resume: +cd '/workspace/my_app\.v2' && claude --resume ` + id + `$`),
		regexp.MustCompile(`(?m)^image: +npm @anthropic-ai/claude-code==\d`),
		regexp.MustCompile(`(?m)^egress: +api\.anthropic\.com$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("plan lacks %s:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "dropped line 14: incomplete") {
		t.Errorf("stderr lacks the dropped-line warnings:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "sk-dry-run-secret") {
		t.Error("the plan shows a credential value")
	}
}

func TestHandoffDryRunJSON(t *testing.T) {
	fx := handoffEnv(t)
	r := runCLI(t, "", "handoff", "codex", "--dry-run", "--json", "--keep-local")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var p plannedPlan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("decode %q: %v", r.stdout, err)
	}
	if p.Session != handofftest.CodexSession || len(p.Files) != 2 || p.Files[0].Size < 1<<20 || p.Workdir != "/workspace/my_app.v2/sub" ||
		len(p.Egress) != 1 || p.Egress[0] != "api.openai.com" {
		t.Errorf("plan = %+v", p)
	}
	m := regexp.MustCompile(`staged session files kept in (\S+)`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("--keep-local named no directory:\n%s", r.stderr)
	}
	defer os.RemoveAll(m[1])
	if _, err := os.Stat(m[1] + "/.codex/sessions/2026/02/23"); err != nil {
		t.Errorf("staged files not kept: %v", err)
	}
	// Credentials are never written on this machine, staged or not.
	err := filepath.WalkDir(m[1], func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, v := range fx.Secrets {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds a credential value", p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stdout, fx.Secrets["codex-auth"]) {
		t.Error("the JSON plan shows a credential value")
	}
}

func TestHandoffUsage(t *testing.T) {
	handoffEnv(t)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"handoff"}, 2, "name one tool: claude-code, codex, gemini, opencode"},
		{[]string{"handoff", "cursor"}, 2, `unknown tool "cursor"`},
		// A --session that cannot be an id is usage (before the terminal
		// check); one that names no session is not found.
		{[]string{"handoff", "claude-code", "--session", "../x", "--dry-run"}, 2, `--session "../x" is not a session id`},
		{[]string{"handoff", "claude-code", "--session", "x/../y"}, 2, `--session "x/../y" is not a session id`},
		{[]string{"handoff", "gemini", "--session", "séance", "--dry-run"}, 2, "is not a session id"},
		{[]string{"handoff", "codex", "--session", "ffffffff-0000-4000-8000-000000000009", "--dry-run"}, 3, "no Codex rollout"},
		{[]string{"handoff", "claude-code", "--session", "ffffffff-0000-4000-8000-000000000009", "--dry-run"}, 3, "ffffffff-0000-4000-8000-000000000009"},
		{[]string{"handoff", "codex", "--no-egress", "--allow-host", "x.example"}, 2, "contradict"},
		// --allow-host is checked before a --dry-run plans it.
		{[]string{"handoff", "claude-code", "--allow-host", "bad host", "--dry-run"}, 2, `--allow-host "bad host" is not HOST or HOST:PORT`},
		{[]string{"handoff", "claude-code", "--allow-host", "x.example:99999", "--dry-run"}, 2, "is not HOST or HOST:PORT"},
		{[]string{"handoff", "claude-code", "--allow-host", "https://x.example/v1", "--dry-run"}, 2, "is not HOST or HOST:PORT"},
		{[]string{"handoff", "claude-code", "--allow-host", ":443", "--dry-run"}, 2, "is not HOST or HOST:PORT"},
		{[]string{"handoff", "codex", "--agent-version", "-1"}, 2, "not a version"},
		{[]string{"handoff", "codex", "-s", "sb", "--image", "img"}, 2, "leave out --image"},
		// -s keeps the sandbox's lifetime and egress: flags that would set
		// them are refused, not ignored.
		{[]string{"handoff", "codex", "-s", "sb", "--lifetime", "1h"}, 2, "leave out --lifetime"},
		{[]string{"handoff", "codex", "-s", "sb", "--no-egress"}, 2, "leave out --no-egress"},
		// A lifetime is whole minutes, as for session create; --dry-run
		// checks it too.
		{[]string{"handoff", "claude-code", "--lifetime", "-5m", "--dry-run"}, 2, "must be positive"},
		{[]string{"handoff", "claude-code", "--lifetime", "0", "--dry-run"}, 2, "must be positive"},
		{[]string{"handoff", "claude-code", "--lifetime", "30s", "--dry-run"}, 2, "less than a minute"},
		{[]string{"handoff", "--retry", "sb", "cursor"}, 2, "--retry takes a sandbox"},
		{[]string{"handoff", "codex", "--force"}, 2, "--force goes with -s"},
		// Without a terminal to attach, nothing is prepared or sent.
		{[]string{"handoff", "claude-code"}, 1, "standard input is not a terminal"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) || !strings.Contains(r.stderr, "\nhint: ") {
			t.Errorf("boxkite %v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

// TestHandoffRetryChecksSandboxFirst: --retry names a sandbox; one that
// does not exist is reported as such (exit 3) even without a terminal, and
// only an existing one gets as far as the terminal check.
func TestHandoffRetryChecksSandboxFirst(t *testing.T) {
	handoffEnv(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{
			{ID: "sb_0123abcd", Status: api.StatusActive},
			{ID: "sb_99990000", Status: api.StatusDestroyed},
		}),
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	tests := []struct {
		ref  string
		code int
		msg  string
	}{
		{"sb_missing", 3, "sb_missing"},
		{"sb_9999", 1, "is destroyed"},
		{"sb_0123", 1, "standard input is not a terminal"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", "handoff", "--retry", tt.ref)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) || !strings.Contains(r.stderr, "\nhint: ") {
			t.Errorf("boxkite handoff --retry %s: exit %d, stderr %q; want exit %d and %q", tt.ref, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

// TestHandoffEgressPlan: the sandbox is granted the agent's model API, or
// the host of the base URL set here (which goes along), or what
// --allow-host names, or nothing with --no-egress.
func TestHandoffEgressPlan(t *testing.T) {
	handoffEnv(t)
	tests := []struct {
		args    []string
		baseURL string
		egress  []string
	}{
		{nil, "", []string{"api.anthropic.com"}},
		{nil, "https://gateway.example:8443/anthropic", []string{"gateway.example:8443"}},
		{nil, "http://127.0.0.1:9", []string{}},
		{[]string{"--allow-host", "a.example", "--allow-host", "b.example:8080"}, "", []string{"a.example", "b.example:8080"}},
		{[]string{"--no-egress"}, "https://gateway.example", []string{}},
	}
	for _, tt := range tests {
		t.Setenv("ANTHROPIC_BASE_URL", tt.baseURL)
		r := runCLI(t, "", append([]string{"handoff", "claude-code", "--dry-run", "--json"}, tt.args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, r.code, r.stderr)
		}
		var p plannedPlan
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatal(err)
		}
		if strings.Join(p.Egress, ",") != strings.Join(tt.egress, ",") {
			t.Errorf("%v with ANTHROPIC_BASE_URL=%q: egress %q, want %q", tt.args, tt.baseURL, p.Egress, tt.egress)
		}
		if hasBase := strings.Contains(strings.Join(p.Settings, ","), "ANTHROPIC_BASE_URL"); hasBase != (tt.baseURL != "") {
			t.Errorf("%v: settings %q; the base URL goes along exactly when it is set", tt.args, p.Settings)
		}
	}
}

// TestHandoffChangedError: a handoff that would overwrite files changed in
// the sandbox since the last one is refused naming a few of them, with
// the hint to copy them out or pass --force.
func TestHandoffChangedError(t *testing.T) {
	changed := []string{"app/a.go", "app/b b.go", "app/c.go", "app/d.go", "app/e.go", "app/f.go", "app/g.go"}
	err := changedError("sb1", changed)
	want := "sandbox sb1 has 7 files changed since the last handoff into it, which this handoff would overwrite: " +
		"/workspace/app/a.go, /workspace/app/b b.go, /workspace/app/c.go, /workspace/app/d.go, /workspace/app/e.go and 2 more"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if h := hintOf(err, nil); !strings.Contains(h, "--force") || !strings.Contains(h, "boxkite files cp sb1:") {
		t.Errorf("hint %q names neither --force nor the copy", h)
	}
	if err := changedError("sb1", changed[:1]); !strings.HasPrefix(err.Error(), "sandbox sb1 has 1 file changed ") || !strings.HasSuffix(err.Error(), ": /workspace/app/a.go") {
		t.Errorf("one file: %q", err)
	}
}
