package handoff

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/handoff/handofftest"
)

const sandboxRoot = "/workspace/my_app.v2"

// prepare runs Prepare for tool on an installed fixture.
func prepare(t *testing.T, fx *handofftest.Fixture, tool, id string, env ...string) *Plan {
	t.Helper()
	p, err := Prepare(context.Background(), Adapters()[tool], Env{Home: fx.Home, Getenv: fx.Env(env...)},
		Options{Dir: fx.Src, Session: id, StageDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Prepare(%s, %q): %v", tool, id, err)
	}
	return p
}

func targets(p *Plan) []string {
	var out []string
	for _, f := range p.Files {
		out = append(out, f.Target)
	}
	slices.Sort(out)
	return out
}

// validLines reads the JSON-object lines of a file, as copyLines keeps them.
func validLines(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		if l := sc.Bytes(); len(l) > 0 && l[0] == '{' && json.Valid(l) {
			out = append(out, sc.Text())
		}
	}
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClaude(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "claude-code", "", "ANTHROPIC_API_KEY", "k1")
	id := handofftest.ClaudeSession
	if p.Session.ID != id {
		t.Fatalf("picked session %s, want the project's newest, %s", p.Session.ID, id)
	}
	proj := "/workspace/.claude/projects/-workspace-my-app-v2/"
	want := []string{
		"/workspace/.claude.json",
		proj + id + ".jsonl",
		proj + id + "/subagents/agent-a1.jsonl",
		proj + id + "/subagents/agent-a1.meta.json",
		proj + id + "/tool-results/toolu_1.txt",
		proj + "agent-legacy1.jsonl",
	}
	if diff := cmp.Diff(want, targets(p)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if p.Workdir != sandboxRoot {
		t.Errorf("workdir = %q, want %q", p.Workdir, sandboxRoot)
	}
	if want := "cd '" + sandboxRoot + "' && claude --resume " + id; p.Resume != want {
		t.Errorf("resume = %q, want %q", p.Resume, want)
	}
	if len(p.Credentials) != 1 || p.Credentials[0].Name != "ANTHROPIC_API_KEY" || p.Credentials[0].Value != "k1" {
		t.Errorf("credentials = %v", p.Credentials)
	}

	// Every kept line is the source line with its top-level cwd and the
	// config-directory paths moved, and nothing else.
	src := readFile(t, p.Session.Path)
	var staged []byte
	for _, f := range p.Files {
		if f.Target == proj+id+".jsonl" {
			staged = readFile(t, f.Staged)
		}
	}
	oldProj := fx.Home + "/.claude/projects/" + handofftest.EncodeClaude(fx.Src) + "/"
	var wantLines []string
	for _, l := range validLines(t, src) {
		// A line recorded in the directory the project was in before
		// (a sibling) moves to the sandbox's tree as well; its payload,
		// not a recorded cwd, stays.
		if old := `"cwd":"` + fx.Src + `-old"`; strings.Contains(l, old) {
			l = strings.Replace(l, old, `"cwd":"`+sandboxRoot+`"`, 1)
		} else {
			l = strings.Replace(l, `"cwd":"`+fx.Src, `"cwd":"`+sandboxRoot, 1)
		}
		wantLines = append(wantLines, strings.ReplaceAll(l, oldProj, proj))
	}
	if len(wantLines) != 10 {
		t.Fatalf("fixture has %d valid lines, want 10", len(wantLines))
	}
	if diff := cmp.Diff(wantLines, strings.Split(strings.TrimSuffix(string(staged), "\n"), "\n")); diff != "" {
		t.Errorf("staged transcript (-want +got):\n%.3000s", diff)
	}
	for _, w := range []string{"dropped line 7: not a JSON", "dropped line 8: not a JSON", "dropped line 14: incomplete", "hosts: symlink to /etc/hosts", "was recorded in " + fx.Src + "-old, outside"} {
		if !slices.ContainsFunc(p.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("warnings %q lack %q", p.Warnings, w)
		}
	}
	for _, name := range []string{".git/HEAD", "main.go", "link.go", "a b.txt", "blob.bin", "untracked.txt", "sub/deep/x.json"} {
		if !slices.Contains(p.Tree.Entries, name) {
			t.Errorf("tree lacks %s", name)
		}
	}
	for _, name := range append([]string{"hosts"}, fx.Ignored...) {
		if slices.Contains(p.Tree.Entries, name) {
			t.Errorf("tree has %s", name)
		}
	}
}

func TestClaudeFind(t *testing.T) {
	fx := handofftest.Install(t)
	a := claudeAdapter{}
	env := Env{Home: fx.Home, Getenv: fx.Env()}
	ctx := context.Background()
	tests := []struct {
		name, dir, id, wantID, wantErr string
	}{
		{"older session by id", fx.Src, handofftest.ClaudeOlderSession, handofftest.ClaudeOlderSession, ""},
		{"another project's session by id", fx.Src, "0b0b0b0b-0000-4000-8000-000000000002", "0b0b0b0b-0000-4000-8000-000000000002", ""},
		{"unknown id", fx.Src, "ffffffff-0000-4000-8000-000000000009", "", "no Claude Code session ffffffff"},
		{"id that is a path", fx.Src, "../../etc/passwd", "", "not a valid identifier"},
		{"id with shell syntax", fx.Src, "x;rm -rf /", "", "not a valid identifier"},
		{"directory without sessions", t.TempDir(), "", "", "no Claude Code session recorded in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := a.Find(ctx, env, tt.dir, tt.id)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Find = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || f.ID != tt.wantID {
				t.Fatalf("Find = %+v, %v, want %s", f, err, tt.wantID)
			}
		})
	}
}

// TestClaudeFindByCwd finds a session whose directory name is not the
// encoding of the cwd (Claude Code hashes long paths, and its hash differs
// between builds) by the cwd recorded in its lines.
func TestClaudeFindByCwd(t *testing.T) {
	fx := handofftest.Install(t)
	dir := t.TempDir()
	proj := filepath.Join(fx.Home, ".claude", "projects", "-some-long-prefix-k3j9x")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = "5e5e5e5e-0000-4000-8000-000000000008"
	line := `{"type":"user","cwd":"` + dir + `","sessionId":"` + id + `","uuid":"h1"}` + "\n"
	if err := os.WriteFile(filepath.Join(proj, id+".jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := claudeAdapter{}.Find(context.Background(), Env{Home: fx.Home, Getenv: fx.Env()}, dir, "")
	if err != nil || f.ID != id || f.Cwd != dir {
		t.Fatalf("Find = %+v, %v; want session %s recorded in %s", f, err, id, dir)
	}
}

func TestCodex(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "codex", "")
	id := handofftest.CodexSession
	if p.Session.ID != id {
		t.Fatalf("picked session %s, want %s", p.Session.ID, id)
	}
	target := "/workspace/.codex/sessions/2026/02/23/rollout-2026-02-23T12-54-34-" + id + ".jsonl"
	if diff := cmp.Diff([]string{"/workspace/.codex/config.toml", target}, targets(p)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if want := sandboxRoot + "/sub"; p.Workdir != want {
		t.Errorf("workdir = %q, want the newest turn's cwd moved, %q", p.Workdir, want)
	}
	if want := "cd '" + sandboxRoot + "/sub' && codex resume --no-daemon " + id; p.Resume != want {
		t.Errorf("resume = %q, want %q", p.Resume, want)
	}
	if len(p.Credentials) != 1 || p.Credentials[0].Value != fx.Secrets["codex-auth"] || p.Credentials[0].Name != "OPENAI_API_KEY" {
		t.Errorf("credentials = %v, want OPENAI_API_KEY from auth.json", p.Credentials)
	}
	staged := map[string]string{}
	for _, f := range p.Files {
		staged[f.Target] = string(readFile(t, f.Staged))
	}
	wantConfig := "[projects.\"" + sandboxRoot + "\"]\ntrust_level = \"trusted\"\n\n[projects.\"" + sandboxRoot + "/sub\"]\ntrust_level = \"trusted\"\n"
	if got := staged["/workspace/.codex/config.toml"]; got != wantConfig {
		t.Errorf("config.toml = %q, want %q", got, wantConfig)
	}
	if diff := cmp.Diff([]Step{{Argv: []string{"codex", "login", "--with-api-key"}, StdinEnv: "OPENAI_API_KEY"}}, p.Login); diff != "" {
		t.Errorf("login steps (-want +got):\n%s", diff)
	}
	got := strings.Split(strings.TrimSuffix(staged[target], "\n"), "\n")
	if len(got) != 11 {
		t.Fatalf("staged %d lines, want 11 (13 less a corrupt and a torn one)", len(got))
	}
	s := fx.Src
	checks := []struct {
		line       int
		path       []string
		want       string
		verbatimOf string // instead: the line must be byte-identical to the source line containing this
	}{
		{0, []string{"payload", "cwd"}, sandboxRoot, ""},
		{0, []string{"payload", "base_instructions", "text"}, "You work in " + s + " <carefully> & well", ""},
		{1, nil, "", "environment_context"},
		{2, []string{"payload", "cwd"}, sandboxRoot, ""},
		{2, []string{"payload", "workspace_roots", "[]"}, sandboxRoot, ""},
		{2, []string{"payload", "file_system_sandbox_policy", "entries", "[]", "path"}, sandboxRoot + "/.git", ""},
		{3, nil, "", "input_image"},
		{5, nil, "", "function_call"},
		{6, nil, "", "world_state"},
		{8, []string{"payload", "cwd"}, sandboxRoot + "/sub", ""},
	}
	src := validLines(t, []byte(strings.ReplaceAll(decompressed(t, fx), "\r", "")))
	for _, c := range checks {
		if c.verbatimOf != "" {
			i := slices.IndexFunc(src, func(l string) bool { return strings.Contains(l, c.verbatimOf) })
			if i < 0 || got[c.line] != src[i] {
				t.Errorf("line %d changed; want it byte for byte as recorded", c.line)
			}
			continue
		}
		if v, _ := stringAt([]byte(got[c.line]), c.path...); v != c.want {
			t.Errorf("line %d %v = %q, want %q", c.line, c.path, v, c.want)
		}
	}
	var roots struct {
		Payload struct {
			SandboxPolicy struct {
				WritableRoots []string `json:"writable_roots"`
			} `json:"sandbox_policy"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(got[2]), &roots); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sandboxRoot, sandboxRoot + "/build", "/tmp", s + "-other"}, roots.Payload.SandboxPolicy.WritableRoots); diff != "" {
		t.Errorf("writable roots (-want +got):\n%s", diff)
	}
}

func decompressed(t *testing.T, fx *handofftest.Fixture) string {
	t.Helper()
	rc, err := openRollout(fx.Home + "/.codex/sessions/2026/02/23/rollout-2026-02-23T12-54-34-" + handofftest.CodexSession + ".jsonl.zst")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCodexFind(t *testing.T) {
	fx := handofftest.Install(t)
	env := Env{Home: fx.Home, Getenv: fx.Env("OPENAI_API_KEY", "from-env")}
	ctx := context.Background()
	f, err := codexAdapter{}.Find(ctx, env, fx.Src, handofftest.CodexPairSession)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(f.Path, ".zst") {
		t.Errorf("picked %s; a plain rollout wins over its compressed sibling", f.Path)
	}
	if _, err := (codexAdapter{}).Find(ctx, env, fx.Src, handofftest.CodexOldFormat); err == nil || !strings.Contains(err.Error(), "older Codex format") {
		t.Errorf("Find(old format) = %v, want a refusal", err)
	}
	if _, err := (codexAdapter{}).Find(ctx, env, t.TempDir(), ""); err == nil {
		t.Error("Find in a directory without sessions succeeded")
	}
	creds, _ := codexCredentials(env)
	if len(creds) != 1 || creds[0].Value != "from-env" {
		t.Errorf("credentials = %v, want the environment's key first", creds)
	}
}

func TestOpencode(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "opencode", "")
	id := handofftest.OpencodeSession
	if p.Session.ID != id {
		t.Fatalf("picked session %s, want %s", p.Session.ID, id)
	}
	file := "/workspace/.opencode-handoff/" + id + ".json"
	if diff := cmp.Diff([]string{file}, targets(p)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if want := "cd '" + sandboxRoot + "' && opencode import " + file + " && opencode --session " + id; p.Resume != want {
		t.Errorf("resume = %q, want %q", p.Resume, want)
	}
	exp := readFile(t, p.Files[0].Staged)
	checks := []struct {
		path []string
		want string
	}{
		{[]string{"info", "directory"}, sandboxRoot},
		{[]string{"info", "title"}, "Fix <b>bold</b> & more"},
		{[]string{"messages", "[]", "info", "path", "cwd"}, sandboxRoot + "/sub"},
		{[]string{"messages", "[]", "info", "path", "root"}, sandboxRoot},
		{[]string{"messages", "[]", "parts", "[]", "state", "input", "filePath"}, fx.Src + "/main.go"},
		{[]string{"messages", "[]", "parts", "[]", "payload", "cwd"}, fx.Src},
	}
	for _, c := range checks {
		if v, _ := stringAt(exp, c.path...); v != c.want {
			t.Errorf("%v = %q, want %q", c.path, v, c.want)
		}
	}
	if !bytes.Contains(exp, []byte(`"n": 1.50`)) || !bytes.Contains(exp, []byte("\n  \"messages\": [\n")) {
		t.Error("the export's formatting was not kept")
	}
	want := `{"anthropic":{"type":"api","key":"` + fx.Secrets["opencode-anthropic"] + `"}}`
	if len(p.Credentials) != 1 || p.Credentials[0].Name != "OPENCODE_AUTH_CONTENT" || p.Credentials[0].Value != want {
		t.Errorf("credentials = %v, want the session provider's API key entry", p.Credentials)
	}
	if _, err := (opencodeAdapter{}).Find(context.Background(), Env{Home: fx.Home, Getenv: fx.Env()}, fx.Src, "ses_missing"); err == nil {
		t.Error("Find of a session opencode does not know succeeded")
	}
}

func TestCredentialString(t *testing.T) {
	c := Credential{Name: "K", Source: "environment", Value: "hunter2"}
	for _, s := range []string{c.String(), strings.Join([]string{c.String()}, "")} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("%q shows the value", s)
		}
	}
}

// FuzzLineEdits feeds arbitrary lines to every adapter's rewriting: the
// result is valid JSON, and a line naming no local path comes out as it
// went in.
func FuzzLineEdits(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"session_meta","payload":{"cwd":"/src/app","roots":["/src/app/x",1]}}`))
	f.Add([]byte(`{"info":{"directory":"/src/app"},"messages":[{"info":{"path":{"cwd":"/src/app","root":"/src"}}}]}`))
	m := Mapping{Rules: []Rule{{From: "/src/app", To: "/workspace/app"}}}
	edits := map[string]lineEdit{
		"claude": claudeEdit(m, "/home/u/.claude/projects/-src-app/", "/workspace/.claude/projects/-workspace-app/"),
		"codex":  codexEdit(m),
		"gemini": geminiEdit(m, "h"),
		"opencode": func(_ int, b []byte) ([]byte, error) {
			return opencodeEdit(b, m), nil
		},
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return
		}
		for name, edit := range edits {
			got, err := edit(1, line)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got == nil {
				got = line
			}
			if !json.Valid(got) {
				t.Fatalf("%s turned %q into invalid JSON %q", name, line, got)
			}
			if name != "gemini" && !bytes.Contains(line, []byte("/src/app")) && !bytes.Contains(line, []byte(`\`)) && !bytes.Equal(got, line) {
				t.Fatalf("%s changed %q, which names no local path, into %q", name, line, got)
			}
		}
	})
}

// TestGeminiSettingsNotJSON: a settings.json with comments (Gemini CLI
// reads JSONC) is left behind with a warning, not an error.
func TestGeminiSettingsNotJSON(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{\n  // mine\n  \"model\": {\"name\": \"x\"}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, warn := geminiCarriedSettings(Env{Home: home})
	if got != nil || !strings.Contains(warn, "stay behind") {
		t.Errorf("geminiCarriedSettings = %v, %q; want nothing and a warning", got, warn)
	}
}

func TestGemini(t *testing.T) {
	fx := handofftest.Install(t)
	p := prepare(t, fx, "gemini", "", "GEMINI_API_KEY", "g1")
	id := handofftest.GeminiSession
	if p.Session.ID != id {
		t.Fatalf("picked session %s, want %s", p.Session.ID, id)
	}
	chats := "/workspace/.gemini/tmp/my-app-v2/chats/"
	want := []string{
		"/workspace/.gemini/projects.json",
		"/workspace/.gemini/settings.json",
		"/workspace/.gemini/trustedFolders.json",
		chats + id + "/" + handofftest.GeminiSubagent + ".jsonl",
		chats + "session-2026-09-01T10-00-3c9d1e2f.jsonl",
		"/workspace/.gemini/tmp/my-app-v2/.project_root",
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, targets(p)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if want := "cd '" + sandboxRoot + "' && gemini --resume " + id; p.Resume != want {
		t.Errorf("resume = %q, want %q", p.Resume, want)
	}
	staged := map[string][]byte{}
	for _, f := range p.Files {
		staged[f.Target] = readFile(t, f.Staged)
	}
	if got := string(staged["/workspace/.gemini/tmp/my-app-v2/.project_root"]); got != sandboxRoot {
		t.Errorf(".project_root = %q", got)
	}
	for file, want := range map[string]any{
		"projects.json": map[string]any{"projects": map[string]any{sandboxRoot: "my-app-v2"}},
		// The local general and model sections go along, not its MCP
		// servers or UI.
		"settings.json": map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"general":  map[string]any{"maxAttempts": float64(1), "vimMode": false},
			"model":    map[string]any{"name": "gemini-2.5-pro"},
		},
		"trustedFolders.json": map[string]any{sandboxRoot: "TRUST_FOLDER"},
	} {
		var got any
		if err := json.Unmarshal(staged["/workspace/.gemini/"+file], &got); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(staged[chats+"session-2026-09-01T10-00-3c9d1e2f.jsonl"]), "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("staged %d lines, want 8 (10 less a corrupt and a torn one)", len(lines))
	}
	var meta struct {
		ProjectHash string   `json:"projectHash"`
		Directories []string `json:"directories"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &meta); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sandboxRoot, sandboxRoot + "/sub", sandboxRoot}, meta.Directories); diff != "" {
		t.Errorf("directories (-want +got):\n%s", diff)
	}
	if sum := sha256.Sum256([]byte(sandboxRoot)); meta.ProjectHash != hex.EncodeToString(sum[:]) {
		t.Errorf("projectHash = %q", meta.ProjectHash)
	}
	if v, _ := stringAt([]byte(lines[4]), "$set", "directories", "[]"); v != sandboxRoot {
		t.Errorf("$set directories = %q, want %q", v, sandboxRoot)
	}
	src := validLines(t, readFile(t, p.Session.Path))
	for i := 1; i < len(lines); i++ {
		if i != 4 && lines[i] != src[i] {
			t.Errorf("line %d changed; want it as recorded", i)
		}
	}
	if got := geminiSlug("/x/My App..v2!"); got != "my-app-v2" {
		t.Errorf("geminiSlug = %q", got)
	}
}

// TestCodexBaseURL: Codex reads its base URL from config.toml's
// openai_base_url (it ignores OPENAI_BASE_URL since 0.119), so a base URL
// used here, from that key or else from the variable, is granted and
// written into the sandbox's config.toml, where the resumed Codex reads
// it; without one, the sandbox's config.toml names none.
func TestCodexBaseURL(t *testing.T) {
	tests := []struct {
		name, localConfig, envURL string
		egress                    []string
		wantLine                  string // the staged config.toml's first line
	}{
		{"none", "", "", []string{"api.openai.com"}, `[projects."` + sandboxRoot + `"]`},
		{"variable", "", "https://gw.example:8443/v1", []string{"gw.example:8443"}, `openai_base_url = "https://gw.example:8443/v1"`},
		{
			"config", "model = \"gpt-5\"\nopenai_base_url = \"https://cfg.example/v1\"\n\n[projects.\"/x\"]\ntrust_level = \"trusted\"\n",
			"https://gw.example/v1",
			[]string{"cfg.example"},
			`openai_base_url = "https://cfg.example/v1"`,
		},
		{"loopback", "openai_base_url = \"http://127.0.0.1:9/v1\"\n", "", nil, `openai_base_url = "http://127.0.0.1:9/v1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := handofftest.Install(t)
			if tt.localConfig != "" {
				if err := os.WriteFile(filepath.Join(fx.Home, ".codex", "config.toml"), []byte(tt.localConfig), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := prepare(t, fx, "codex", "", "OPENAI_BASE_URL", tt.envURL)
			if diff := cmp.Diff(tt.egress, p.Egress); diff != "" {
				t.Errorf("egress (-want +got):\n%s", diff)
			}
			for _, f := range p.Files {
				if f.Target != "/workspace/.codex/config.toml" {
					continue
				}
				got := string(readFile(t, f.Staged))
				if first, _, _ := strings.Cut(got, "\n"); first != tt.wantLine {
					t.Errorf("config.toml starts %q, want %q:\n%s", first, tt.wantLine, got)
				}
				if n := strings.Count(got, "openai_base_url"); n > 1 {
					t.Errorf("config.toml sets openai_base_url %d times:\n%s", n, got)
				}
			}
		})
	}
}

// TestSetTopLevelKey: a sandbox's own config.toml keeps its tables and
// other keys; an openai_base_url it had is replaced in place, one it did
// not have goes before the first table.
func TestSetTopLevelKey(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"", "k = \"v\"\n"},
		{"[t]\nk = \"old\"\n", "k = \"v\"\n[t]\nk = \"old\"\n"},
		{"a = 1\nk = \"old\"\n[t]\nk = \"x\"\n", "a = 1\nk = \"v\"\n[t]\nk = \"x\"\n"},
		{"\"k\" = 'old'\n", "k = \"v\"\n"},
		{"kk = 1\n", "k = \"v\"\nkk = 1\n"},
	}
	for _, tt := range tests {
		if got := string(setTopLevelKey([]byte(tt.doc), "k", `"v"`)); got != tt.want {
			t.Errorf("setTopLevelKey(%q) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

// bunLikeOpencode is a stand-in for the real opencode, a Bun binary,
// as it writes its output: standard output non-blocking, one write, and
// exit without waiting for a pipe to drain. Through a pipe an export
// stops at the pipe's 64 KiB; into a file it is whole.
const bunLikeOpencode = `#!/usr/bin/env python3
import os, sys
here = %q
name = "list.json" if sys.argv[1] == "session" else sys.argv[2] + ".json"
data = open(os.path.join(here, name), "rb").read()
os.set_blocking(1, False)
try:
    os.write(1, data)
except BlockingIOError:
    pass
`

// TestOpencodeExportWhole: a session export over 64 KiB (the fixture's
// holds a 1.1 MB image) arrives whole from an opencode that does not wait
// for its output to be read.
func TestOpencodeExportWhole(t *testing.T) {
	fx := handofftest.Install(t)
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(bin, []byte(fmt.Sprintf(bunLikeOpencode, filepath.Dir(fx.Opencode))), 0o755); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, fx, "opencode", "", "BOXKITE_OPENCODE", bin)
	exp := readFile(t, p.Files[0].Staged)
	if len(exp) < 1<<20 || !json.Valid(exp) {
		t.Errorf("staged export: %d bytes, valid JSON %v; want the whole export, over 1 MiB", len(exp), json.Valid(exp))
	}
}
