// Package handofftest installs the synthetic handoff fixtures of
// handoff/testdata for tests: a fake home directory holding Claude Code,
// Codex and opencode sessions recorded in a project directory (a git
// repository with ignored files, a symlink, a binary file), a stand-in
// opencode binary, and unique credential values to look for.
package handofftest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/klauspost/compress/zstd"
)

// The fixture sessions' ids.
const (
	ClaudeSession      = "3f1c2b7e-8d4a-4c1e-9a6b-2d5e7f8a9b0c"
	ClaudeOlderSession = "0a0a0a0a-0000-4000-8000-000000000001"
	CodexSession       = "019c8a53-0000-7000-8000-00000000c0de"
	CodexOlderSession  = "019c8a00-0000-7000-8000-000000000001"
	CodexPairSession   = "019c8a10-0000-7000-8000-000000000004" // plain and .zst
	CodexOldFormat     = "019c0000-0000-7000-8000-000000000003"
	OpencodeSession    = "ses_8fz2kq1m0000000000000003"
	GeminiSession      = "3c9d1e2f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	GeminiSubagent     = "7d7d7d7d-0000-4000-8000-000000000005"
)

// Fixture is one installed copy of the fixtures.
type Fixture struct {
	Home     string            // fake home directory
	Src      string            // the project directory the sessions were recorded in
	Opencode string            // the stand-in opencode binary
	Secrets  map[string]string // credential values in the fixture files, by name
	Ignored  []string          // project files .gitignore leaves out
}

// Install copies the fixtures (Claude Code, Codex, opencode and Gemini CLI) into a fresh temporary directory, filling
// in the placeholders: @@SRC@@ (the project directory), @@ENC@@ (its Claude
// Code encoding, also in file names), @@CLAUDE@@ (the Claude config
// directory), @@PAD:N@@ (N bytes of base64-looking data, for lines over a
// megabyte) and @@SECRET:name@@ (a unique credential value). Files named
// *.zst.in are installed zstd-compressed as *.zst.
func Install(t testing.TB) *Fixture {
	t.Helper()
	base := t.TempDir()
	f := &Fixture{
		Home:     filepath.Join(base, "home"),
		Src:      filepath.Join(base, "home", "src", "my_app.v2"),
		Opencode: filepath.Join(base, "bin", "opencode"),
		Secrets:  map[string]string{},
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		f.Home, f.Src, f.Opencode = rebaseAll(base, real, f.Home, f.Src, f.Opencode)
	}
	dir := testdata(t)
	enc := EncodeClaude(f.Src)
	vars := strings.NewReplacer("@@SRC@@", f.Src, "@@ENC@@", enc, "@@CLAUDE@@", filepath.Join(f.Home, ".claude"))
	f.copyTree(t, filepath.Join(dir, "home"), f.Home, vars)
	f.copyTree(t, filepath.Join(dir, "opencode"), filepath.Dir(f.Opencode), vars)
	f.makeProject(t)
	f.setTimes(t, enc)
	return f
}

func rebaseAll(from, to string, ps ...string) (string, string, string) {
	for i, p := range ps {
		ps[i] = to + strings.TrimPrefix(p, from)
	}
	return ps[0], ps[1], ps[2]
}

func testdata(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("handofftest: cannot locate the fixtures")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

var (
	padRE    = regexp.MustCompile(`@@PAD:(\d+)@@`)
	secretRE = regexp.MustCompile(`@@SECRET:([a-z-]+)@@`)
)

func (f *Fixture) copyTree(t testing.TB, from, to string, vars *strings.Replacer) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, vars.Replace(rel))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b = f.expand(vars, b)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if strings.HasSuffix(dst, ".zst.in") {
			dst = strings.TrimSuffix(dst, ".in")
			if b, err = compress(b); err != nil {
				return err
			}
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("handofftest: install %s: %v", from, err)
	}
}

func (f *Fixture) expand(vars *strings.Replacer, b []byte) []byte {
	b = []byte(vars.Replace(string(b)))
	b = padRE.ReplaceAllFunc(b, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(padRE.FindSubmatch(m)[1]))
		return Pad(n)
	})
	return secretRE.ReplaceAllFunc(b, func(m []byte) []byte {
		name := string(secretRE.FindSubmatch(m)[1])
		if _, ok := f.Secrets[name]; !ok {
			f.Secrets[name] = fmt.Sprintf("bxk-test-%s-%d", name, time.Now().UnixNano())
		}
		return []byte(f.Secrets[name])
	})
}

// Pad is n bytes of deterministic base64-looking data.
func Pad(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[(i*7+i/64)%len(alphabet)]
	}
	return b
}

func compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// makeProject builds the project directory: a git repository with a
// commit, ignored files, an untracked file, a binary, an executable, a
// name with a space, a symlink inside the tree and one out of it.
func (f *Fixture) makeProject(t testing.TB) {
	t.Helper()
	files := map[string]string{
		"main.go":         "package main\n\nfunc main() {}\n",
		"sub/notes.md":    "# notes\n",
		"a b.txt":         "spaces in the name\n",
		".gitignore":      "build/\n*.log\n",
		"build/out.bin":   "ignored build output\n",
		"debug.log":       "ignored log\n",
		"untracked.txt":   "not committed, not ignored\n",
		"run.sh":          "#!/bin/sh\necho run\n",
		"sub/deep/x.json": `{"k":"v"}` + "\n",
	}
	var bin []byte
	for i := range 256 {
		bin = append(bin, byte(i))
	}
	files["blob.bin"] = string(bin)
	for name, body := range files {
		p := filepath.Join(f.Src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	f.Ignored = []string{"build/out.bin", "debug.log"}
	if err := os.Symlink("main.go", filepath.Join(f.Src, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hosts", filepath.Join(f.Src, "hosts")); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-C", f.Src}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+f.Home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "main.go", "sub", "a b.txt", ".gitignore", "run.sh", "blob.bin", "link.go", "hosts")
	git("commit", "-q", "-m", "fixture")
}

// setTimes orders the sessions: the fixture session is the newest of the
// project's, and a session of another project is newer still.
func (f *Fixture) setTimes(t testing.TB, enc string) {
	t.Helper()
	now := time.Now()
	claude := filepath.Join(f.Home, ".claude", "projects")
	codex := filepath.Join(f.Home, ".codex")
	gemini := filepath.Join(f.Home, ".gemini", "tmp")
	times := map[string]time.Duration{
		filepath.Join(claude, enc, ClaudeSession+".jsonl"):                                                                 time.Hour,
		filepath.Join(claude, enc, ClaudeOlderSession+".jsonl"):                                                            48 * time.Hour,
		filepath.Join(claude, "-elsewhere-project", "0b0b0b0b-0000-4000-8000-000000000002.jsonl"):                          0,
		filepath.Join(codex, "sessions/2026/02/23/rollout-2026-02-23T12-54-34-"+CodexSession+".jsonl.zst"):                 time.Hour,
		filepath.Join(codex, "sessions/2026/02/20/rollout-2026-02-20T09-00-00-"+CodexOlderSession+".jsonl"):                48 * time.Hour,
		filepath.Join(codex, "sessions/2026/02/24/rollout-2026-02-24T09-00-00-019c8b00-0000-7000-8000-000000000002.jsonl"): 0,
		filepath.Join(codex, "sessions/2026/02/21/rollout-2026-02-21T09-00-00-"+CodexPairSession+".jsonl"):                 72 * time.Hour,
		filepath.Join(codex, "sessions/2026/02/21/rollout-2026-02-21T09-00-00-"+CodexPairSession+".jsonl.zst"):             72 * time.Hour,
		filepath.Join(gemini, "my-app-v2/chats/session-2026-09-01T10-00-3c9d1e2f.jsonl"):                                   time.Hour,
		filepath.Join(gemini, "my-app-v2/chats/session-2026-08-30T09-00-1a1a1a1a.jsonl"):                                   48 * time.Hour,
		filepath.Join(gemini, "other/chats/session-2026-09-02T09-00-2b2b2b2b.jsonl"):                                       0,
		filepath.Join(codex, "archived_sessions/rollout-2025-08-01T09-00-00-"+CodexOldFormat+".jsonl"):                     96 * time.Hour,
	}
	for p, age := range times {
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatalf("handofftest: %v", err)
		}
	}
}

// Env is the environment the fixture's tools would see: HOME and nothing
// else, unless extra (name, value pairs) adds to it.
func (f *Fixture) Env(extra ...string) func(string) string {
	m := map[string]string{"HOME": f.Home, "BOXKITE_OPENCODE": f.Opencode}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

// EncodeClaude is Claude Code's project directory name for a path, as the
// handoff package computes it (repeated here so a test of one checks the
// other).
func EncodeClaude(p string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(p)) {
		if u < 128 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}
