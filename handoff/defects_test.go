package handoff

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/handoff/handofftest"
)

// TestSessionMapping: every directory a session was recorded in moves to
// the sandbox's tree, subdirectories to their place below it; a relative
// or foreign working directory never becomes a rule.
func TestSessionMapping(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name  string
		cwds  []string
		paths map[string]string // local path -> want in the sandbox ("" = untouched)
	}{
		{"inside the tree", []string{root, root + "/sub"}, map[string]string{
			root: "/workspace/app", root + "/sub/x": "/workspace/app/sub/x", "/elsewhere": "",
		}},
		{"moved between directories", []string{"/old/app", "/old/app/sub", root}, map[string]string{
			"/old/app": "/workspace/app", "/old/app/sub": "/workspace/app/sub", "/old/app-2": "", root + "/a": "/workspace/app/a",
		}},
		{"only a subdirectory recorded", []string{"/old/app/sub/deeper", "/old/app/sub"}, map[string]string{
			"/old/app/sub": "/workspace/app", "/old/app/sub/deeper": "/workspace/app/deeper", "/old/app": "",
		}},
		{"relative and foreign cwds are no rules", []string{"repo", ".", "C:\\Users\\me\\proj", root}, map[string]string{
			"repo": "", "repo/x": "", ".": "", "C:\\Users\\me\\proj": "", "019c8a53-0000-7000-8000-00000000c0de": "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Found{ID: "s", Cwds: tt.cwds, Cwd: tt.cwds[len(tt.cwds)-1]}
			m, _ := sessionMapping(context.Background(), root, "/workspace/app", f)
			for p, want := range tt.paths {
				got, ok := m.Rebase(p)
				if want == "" && ok {
					t.Errorf("Rebase(%q) = %q, want it untouched", p, got)
				}
				if want != "" && got != want {
					t.Errorf("Rebase(%q) = %q, want %q", p, got, want)
				}
			}
		})
	}
}

// TestCodexEditPathFieldsOnly: a rewrite touches path-valued fields only,
// never ids or texts that happen to equal a recorded directory.
func TestCodexEditPathFieldsOnly(t *testing.T) {
	m := Mapping{Rules: []Rule{{From: "/src/app", To: "/workspace/app"}}}
	line := `{"type":"turn_context","payload":{"id":"/src/app","session_id":"/src/app","turn_id":"/src/app/t1","cwd":"/src/app/sub","base_instructions":{"text":"/src/app"},"workspace_roots":["/src/app"],"sandbox_policy":{"writable_roots":["/src/app/build","/tmp"]},"file_system_sandbox_policy":{"entries":[{"path":"/src/app/.git","access":"read"}]}}}`
	want := `{"type":"turn_context","payload":{"id":"/src/app","session_id":"/src/app","turn_id":"/src/app/t1","cwd":"/workspace/app/sub","base_instructions":{"text":"/src/app"},"workspace_roots":["/workspace/app"],"sandbox_policy":{"writable_roots":["/workspace/app/build","/tmp"]},"file_system_sandbox_policy":{"entries":[{"path":"/workspace/app/.git","access":"read"}]}}}`
	got, err := codexEdit(m)(1, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("codexEdit:\n got %s\nwant %s", got, want)
	}
}

// TestCodexRelativeCwd hands off a rollout whose recorded cwd is not an
// absolute path: nothing in it is rewritten and it resumes in the tree.
func TestCodexRelativeCwd(t *testing.T) {
	fx := handofftest.Install(t)
	id := "019c9999-0000-7000-8000-000000000007"
	body := `{"timestamp":"t","type":"session_meta","payload":{"id":"` + id + `","cwd":"` + id + `","base_instructions":{"text":"` + id + `"}}}` + "\n" +
		`{"timestamp":"t","type":"turn_context","payload":{"turn_id":"` + id + `/1","cwd":"` + id + `"}}` + "\n"
	dir := filepath.Join(fx.Home, ".codex/sessions/2026/03/01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-03-01T09-00-00-"+id+".jsonl"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, fx, "codex", id)
	if p.Workdir != sandboxRoot {
		t.Errorf("workdir = %q, want %q", p.Workdir, sandboxRoot)
	}
	for _, f := range p.Files {
		if strings.HasSuffix(f.Target, ".jsonl") {
			if got := string(readFile(t, f.Staged)); got != body {
				t.Errorf("staged rollout changed:\n got %s\nwant %s", got, body)
			}
		}
	}
}

// TestPrepareFromSubdirectory: run from a subdirectory of the project,
// the handoff finds the session recorded at the project's root and sends
// the whole tree.
func TestPrepareFromSubdirectory(t *testing.T) {
	fx := handofftest.Install(t)
	for _, tool := range []string{"claude-code", "codex", "gemini", "opencode"} {
		p, err := Prepare(context.Background(), Adapters()[tool], Env{Home: fx.Home, Getenv: fx.Env()},
			Options{Dir: filepath.Join(fx.Src, "sub", "deep"), StageDir: t.TempDir()})
		if err != nil {
			t.Errorf("%s: Prepare from a subdirectory: %v", tool, err)
			continue
		}
		if p.Tree.Root != fx.Src {
			t.Errorf("%s: tree root %s, want %s", tool, p.Tree.Root, fx.Src)
		}
	}
}

// TestPrepareErrorsHaveHints: what Prepare refuses, it says how to fix,
// and no message ends in a dangling separator.
func TestPrepareErrorsHaveHints(t *testing.T) {
	fx := handofftest.Install(t)
	silent := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(silent, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name, tool, dir, id string
		env                 []string
		want                string
	}{
		{"no session here", "claude-code", empty, "", nil, "no Claude Code session recorded in"},
		{"unknown id", "codex", fx.Src, "ffffffff-0000-4000-8000-000000000009", nil, "no Codex rollout"},
		{"bad id", "gemini", fx.Src, "../x", nil, "not a valid identifier"},
		{"opencode fails without a word", "opencode", fx.Src, "", []string{"BOXKITE_OPENCODE", silent}, "exit status 3"},
		{"opencode missing", "opencode", fx.Src, "", []string{"BOXKITE_OPENCODE", ""}, "opencode is not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fx.Env(tt.env...)
			if tt.name == "opencode missing" {
				git, err := exec.LookPath("git")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(git, filepath.Join(empty, "git")); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", empty) // git, and no opencode
			}
			_, err := Prepare(context.Background(), Adapters()[tt.tool], Env{Home: fx.Home, Getenv: env},
				Options{Dir: tt.dir, Session: tt.id, StageDir: t.TempDir()})
			e, ok := errors.AsType[*Error](err)
			if !ok || !strings.Contains(err.Error(), tt.want) || e.Hint == "" {
				t.Fatalf("Prepare = %v (hint %v), want an error containing %q with a hint", err, ok && e.Hint != "", tt.want)
			}
			if msg := err.Error(); strings.HasSuffix(msg, ": ") || strings.HasSuffix(msg, ":") {
				t.Errorf("message %q ends in a dangling separator", msg)
			}
		})
	}
}

// TestPrepareNoRecords: a transcript without one valid line is an error
// with a hint, not an empty file sent on; an empty companion file is left
// out with a warning.
func TestPrepareNoRecords(t *testing.T) {
	fx := handofftest.Install(t)
	proj := filepath.Join(fx.Home, ".claude/projects", handofftest.EncodeClaude(fx.Src))
	sub := filepath.Join(proj, handofftest.ClaudeSession, "subagents", "agent-a1.jsonl")
	if err := os.WriteFile(sub, []byte("{\"torn\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, fx, "claude-code", handofftest.ClaudeSession)
	for _, f := range p.Files {
		if f.Local == sub {
			t.Errorf("the empty subagent file was staged")
		}
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), sub+": left out") {
		t.Errorf("warnings %q do not name the left-out file", p.Warnings)
	}

	const id = "0c0c0c0c-0000-4000-8000-000000000003"
	if err := os.WriteFile(filepath.Join(proj, id+".jsonl"), []byte("garbage\n{\"x\":\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Prepare(context.Background(), Adapters()["claude-code"], Env{Home: fx.Home, Getenv: fx.Env()},
		Options{Dir: fx.Src, Session: id, StageDir: t.TempDir()})
	if e, ok := errors.AsType[*Error](err); !ok || !errors.Is(err, errNoRecords) || e.Hint == "" {
		t.Errorf("Prepare of a transcript without records = %v, want errNoRecords with a hint", err)
	}
}

// TestOpencodePathString: an export whose message path is a plain string
// (some versions) has it rewritten like the object form.
func TestOpencodePathString(t *testing.T) {
	m := Mapping{Rules: []Rule{{From: "/src/app", To: "/workspace/app"}}}
	exp := []byte(`{"info":{"id":"ses_1","directory":"/src/app","path":"/src/app/sub"},"messages":[{"info":{"role":"assistant","path":"/src/app/sub"},"parts":[{"text":"/src/app"}]}]}`)
	want := `{"info":{"id":"ses_1","directory":"/workspace/app","path":"/workspace/app/sub"},"messages":[{"info":{"role":"assistant","path":"/workspace/app/sub"},"parts":[{"text":"/src/app"}]}]}`
	if got := string(opencodeEdit(exp, m)); got != want {
		t.Errorf("opencodeEdit:\n got %s\nwant %s", got, want)
	}
	if diff := cmp.Diff([]string{"/src/app/sub", "/src/app"}, opencodeDirs(exp, "/src/app")); diff != "" {
		t.Errorf("opencodeDirs (-want +got):\n%s", diff)
	}
}

// TestTwoHandoffsOneSandbox: a second handoff into a sandbox replaces the
// first one's files in the one handoff directory; without credentials
// its env file is empty, so the first one's credentials do not stay.
func TestTwoHandoffsOneSandbox(t *testing.T) {
	fx := handofftest.Install(t)
	var rec recorder
	first := prepare(t, fx, "claude-code", "", "ANTHROPIC_API_KEY", "sk-first-secret")
	if _, err := Transfer(context.Background(), first, &rec, "sbx1", nil); err != nil {
		t.Fatal(err)
	}
	second := prepare(t, fx, "gemini", "")
	if _, err := Transfer(context.Background(), second, &rec, "sbx1", nil); err != nil {
		t.Fatal(err)
	}
	a, b := rec.archives[1], rec.archives[3]
	for name := range a {
		if _, ok := b[name]; !ok {
			t.Errorf("the second handoff does not replace %s of the first", name)
		}
	}
	if env := b[".boxkite-handoff/env"]; env.hdr == nil || strings.Contains(string(env.body), "sk-first-secret") {
		t.Errorf("the second handoff's env file keeps the first one's credentials: %q", env.body)
	}
}

// TestRunScript sources the run script in a real shell with a stand-in
// tool: the credentials reach the tool and no further (not the shell, not
// the disk once it started), the login step reads the key from stdin, a
// missing tool or a failed start says how to retry, and nothing it needs
// is removed before the tool starts.
func TestRunScript(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "codex", "")
	run, err := p.runScript("sbx1")
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	dir, work, bin := filepath.Join(base, "handoff"), filepath.Join(base, "work"), filepath.Join(base, "bin")
	run = strings.ReplaceAll(run, HandoffDir, dir)
	run = strings.ReplaceAll(run, p.Workdir, work)
	for _, d := range []string{dir, work, bin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, body string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "run"), run, 0o600)
	writeEnv := func() { write(filepath.Join(dir, "env"), string(envFile(p.Credentials, p.Settings)), 0o600) }
	source := func(path string) (string, error) {
		cmd := exec.Command("sh", "-c", `. "$1/run"; echo "shell=${OPENAI_API_KEY:-unset} status=$?"`, "sh", dir)
		cmd.Env = []string{"PATH=" + path, "HOME=" + base}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	key := fx.Secrets["codex-auth"]

	// No codex: nothing is removed, and the hint names the retry.
	writeEnv()
	out, _ := source("/usr/bin:/bin")
	if !strings.Contains(out, "error: codex is not installed") || !strings.Contains(out, "boxkite handoff --retry sbx1") {
		t.Errorf("without the tool:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "env")); err != nil {
		t.Errorf("the credentials were removed before the tool started: %v", err)
	}

	write(filepath.Join(bin, "codex"), `#!/bin/sh
case "$1" in
login) cat > "$HOME/login-stdin"; exit 0 ;;
resume) echo "tool: $* in $(pwd) key=${#OPENAI_API_KEY} env-file=$(test -e `+dir+`/env && echo kept || echo gone)"; exit "${FAKE_STATUS:-0}" ;;
esac
exit 9
`, 0o755)
	path := bin + ":/usr/bin:/bin"
	out, _ = source(path)
	for _, want := range []string{
		"tool: resume --no-daemon " + handofftest.CodexSession + " in " + work + " key=" + strconv.Itoa(len(key)) + " env-file=gone",
		"hint: codex ended; 'boxkite handoff --retry sbx1'",
		"shell=unset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("a clean start printed\n%s\nlacking %q", out, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(base, "login-stdin")); strings.TrimSpace(string(got)) != key {
		t.Errorf("codex login read %q from stdin, want the key", got)
	}
	if strings.Contains(run, key) {
		t.Error("the run script holds the key")
	}

	// Sourced again, the used-up credentials are named, with the retry.
	out, _ = source(path)
	if !strings.Contains(out, "credentials of this handoff are used up") || !strings.Contains(out, "--retry sbx1") {
		t.Errorf("a second run printed:\n%s", out)
	}

	// A Ctrl-C that ends the tool (delivered to its shell as well, as a
	// terminal's is to the foreground job) does not stop the hint.
	writeEnv()
	write(filepath.Join(bin, "codex"), "#!/bin/sh\ncase \"$1\" in login) cat >/dev/null; exit 0;; esac\nkill -INT $PPID\nsleep 0.2\nexit 0\n", 0o755)
	if out, _ = source(path); !strings.Contains(out, "hint: codex ended; 'boxkite handoff --retry sbx1'") {
		t.Errorf("after an interrupt the script printed:\n%s", out)
	}

	// The tool fails: its status and the retry are said.
	writeEnv()
	write(filepath.Join(bin, "codex"), "#!/bin/sh\ncase \"$1\" in login) cat >/dev/null; exit 0;; esac\necho 'stream disconnected: failed to lookup address' >&2\nexit 3\n", 0o755)
	out, _ = source(path)
	for _, want := range []string{"stream disconnected", "error: codex ended with status 3", "hint: the sandbox and the session stay", "boxkite handoff --retry sbx1"} {
		if !strings.Contains(out, want) {
			t.Errorf("a failed start printed\n%s\nlacking %q", out, want)
		}
	}
}

// TestOpencodeLeavesDataAlone: opencode writes to its data as it opens it
// (migrations, WAL checkpoints, logs, locks); the handoff runs it on a
// copy, so the user's files stay as they were, and the session is found
// all the same.
func TestOpencodeLeavesDataAlone(t *testing.T) {
	fx := handofftest.Install(t)
	data := filepath.Join(fx.Home, ".local/share/opencode")
	exp := readFile(t, filepath.Join(filepath.Dir(fx.Opencode), handofftest.OpencodeSession+".json"))
	if err := os.WriteFile(filepath.Join(data, "opencode.db"), exp, 0o600); err != nil {
		t.Fatal(err)
	}
	// A stand-in that reads its "database" where opencode would and, as
	// opencode does, writes beside it.
	bin := filepath.Join(t.TempDir(), "opencode")
	script := `#!/bin/sh
db="${XDG_DATA_HOME:-$HOME/.local/share}/opencode/opencode.db"
echo "opened" >> "$db-wal"
mkdir -p "${XDG_STATE_HOME:-$HOME/.local/state}/opencode/locks" && : > "${XDG_STATE_HOME:-$HOME/.local/state}/opencode/locks/x"
case "$1" in
session) printf '[{"id":"%s","directory":"%s","updated":1}]' "` + handofftest.OpencodeSession + `" "` + fx.Src + `" ;;
export) cat "$db" ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, fx, "opencode", "", "BOXKITE_OPENCODE", bin)
	if p.Session.ID != handofftest.OpencodeSession {
		t.Fatalf("found %s", p.Session.ID)
	}
	after, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("opencode's data directory changed: %d entries, was %d", len(after), len(before))
	}
	if got := readFile(t, filepath.Join(data, "opencode.db")); !bytes.Equal(got, exp) {
		t.Error("opencode's database changed")
	}
	if _, err := os.Stat(filepath.Join(fx.Home, ".local/state")); err == nil {
		t.Error("opencode wrote its state (locks) into the user's home")
	}
}
