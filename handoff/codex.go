package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pelletier/go-toml/v2"
)

// codexAdapter reads Codex CLI rollouts: one JSONL file per thread under
// $CODEX_HOME/sessions/YYYY/MM/DD/, zstd-compressed (.jsonl.zst) once idle
// for a week. `codex resume <id>` finds a rollout by id anywhere under
// sessions/, so it keeps its name and date directories; the recorded cwd
// is rewritten so the resumed agent works in the sandbox's directory.
type codexAdapter struct{}

func (codexAdapter) Name() string { return "codex" }

func codexHome(env Env) string {
	if d := env.get("CODEX_HOME"); d != "" {
		return d
	}
	return filepath.Join(env.Home, ".codex")
}

// codexName matches a rollout file name: local-time stamp and thread id.
var codexName = regexp.MustCompile(`^rollout-(\d{4})-(\d{2})-(\d{2})T\d{2}-\d{2}-\d{2}-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl(\.zst)?$`)

type codexRollout struct {
	path string
	id   string
	zst  bool
	mod  time.Time
}

// codexRollouts lists the rollouts under sessions/ and archived_sessions/;
// a plain file wins over a compressed sibling, as in Codex.
func codexRollouts(home string) ([]codexRollout, error) {
	var out []codexRollout
	plain := map[string]bool{}
	for _, root := range []string{filepath.Join(home, "sessions"), filepath.Join(home, "archived_sessions")} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == root && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipDir
				}
				return err
			}
			m := codexName.FindStringSubmatch(d.Name())
			if m == nil || !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, codexRollout{path: p, id: strings.ToLower(m[4]), zst: m[5] != "", mod: fi.ModTime()})
			if m[5] == "" {
				plain[p] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", root, err)
		}
	}
	kept := out[:0]
	for _, r := range out {
		if !r.zst || !plain[strings.TrimSuffix(r.path, ".zst")] {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

func (a codexAdapter) Find(_ context.Context, env Env, dir, id string) (*Found, error) {
	home := codexHome(env)
	if id != "" {
		if err := checkIdent("session id", id); err != nil {
			return nil, err
		}
	}
	all, err := codexRollouts(home)
	if err != nil {
		return nil, err
	}
	var cands []codexRollout
	for _, r := range all {
		if id == "" || r.id == strings.ToLower(id) {
			cands = append(cands, r)
		}
	}
	// Newest first; without an id the first whose cwd is dir wins.
	for len(cands) > 0 {
		best, _ := newest(cands, func(r codexRollout) time.Time { return r.mod })
		cwds, err := codexCwds(best)
		cwd := ""
		if len(cwds) > 0 {
			cwd = cwds[len(cwds)-1]
		}
		if err == nil && (id != "" || sameDir(cwd, dir)) {
			return &Found{Tool: a.Name(), ID: best.id, Path: best.path, Cwd: cwd, Cwds: cwds, Modified: best.mod}, nil
		}
		if id != "" {
			return nil, err
		}
		cands = removePath(cands, best.path)
	}
	if id != "" {
		return nil, noSessionf("no Codex rollout for session %s under %s", id, home)
	}
	return nil, noSessionf("no Codex session recorded in %s or below (looked under %s)", dir, home)
}

func removePath(rs []codexRollout, p string) []codexRollout {
	out := rs[:0]
	for _, r := range rs {
		if r.path != p {
			out = append(out, r)
		}
	}
	return out
}

// openRollout opens a rollout, decompressing .zst.
func openRollout(p string) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(p, ".zst") {
		return f, nil
	}
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return zstdFile{zr: zr, f: f}, nil
}

type zstdFile struct {
	zr *zstd.Decoder
	f  *os.File
}

func (z zstdFile) Read(p []byte) (int, error) { return z.zr.Read(p) }
func (z zstdFile) Close() error {
	z.zr.Close()
	return z.f.Close()
}

// errOldRollout refuses the pre-envelope rollout generations: current
// Codex cannot resume them either.
var errOldRollout = errors.New("the rollout does not start with a session_meta record (an older Codex format that current Codex cannot resume)")

// codexCwds lists the working directories the rollout records: the
// session's (session_meta) first, then each turn's (turn_context), the
// newest last. It also checks the format.
func codexCwds(r codexRollout) ([]string, error) {
	rc, err := openRollout(r.path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var cwds []string
	first, meta := true, false
	var ferr error
	_, err = copyLines(rc, io.Discard, r.path, func(_ int, line []byte) ([]byte, error) {
		typ, _ := stringAt(line, "type")
		if first && typ != "session_meta" {
			ferr = fmt.Errorf("%s: %w", r.path, errOldRollout)
			return nil, ferr
		}
		first = false
		if typ == "session_meta" && meta {
			return nil, nil // copied in from a fork's history
		}
		if typ == "session_meta" || typ == "turn_context" {
			meta = meta || typ == "session_meta"
			if c, ok := stringAt(line, "payload", "cwd"); ok && c != "" {
				cwds = append(cwds, c)
			}
		}
		return nil, nil
	})
	if ferr != nil {
		return nil, ferr
	}
	if errors.Is(err, errNoRecords) {
		return nil, fmt.Errorf("%s: empty rollout", r.path)
	}
	return cwds, err
}

func (a codexAdapter) Bundle(_ context.Context, env Env, f *Found, m Mapping) (*Bundle, error) {
	name := strings.TrimSuffix(filepath.Base(f.Path), ".zst")
	parts := codexName.FindStringSubmatch(name)
	if parts == nil {
		return nil, fmt.Errorf("%s is not named like a Codex rollout", f.Path)
	}
	// The date directories come from the name (local time of the source
	// machine), as Codex itself derives them.
	target, err := sandboxPath(".codex", "sessions", parts[1], parts[2], parts[3], name)
	if err != nil {
		return nil, err
	}
	workdir := m.workdir(f.Cwd)
	// --no-daemon: the TUI's shared background server would copy the
	// whole 300 MB binary into ~/.codex and outlive the session.
	b := &Bundle{Workdir: workdir, Resume: [][]string{{"codex", "resume", "--no-daemon", f.ID}}}
	b.Files = append(b.Files, File{Local: f.Path, Target: target, Write: func(w io.Writer) ([]string, error) {
		rc, err := openRollout(f.Path)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		st, err := copyLines(rc, w, f.Path, codexEdit(m))
		return st.Warnings, err
	}})
	baseURL, _ := codexBaseURL(env)
	b.Files = append(b.Files, codexConfigFile(trustedDirs(m, workdir), baseURL))
	b.launch(LaunchFor(a.Name(), env, ""))
	return b, nil
}

// codexPathKeys are the keys whose values are paths in session_meta and
// turn_context payloads: the working directory, the workspace and
// writable roots, sandbox policy entries. Ids, instructions and anything
// else are never rewritten, even when they spell a path.
var codexPathKeys = map[string]bool{
	"cwd": true, "workspace_roots": true, "writable_roots": true, "readable_roots": true,
	"path": true, "root": true, "roots": true,
}

// codexEdit moves the path-valued strings of the session_meta and
// turn_context payloads: values that are a mapped directory or lie under
// one. Response items (the conversation) and encrypted content are
// untouched.
func codexEdit(m Mapping) lineEdit {
	return func(_ int, line []byte) ([]byte, error) {
		typ, _ := stringAt(line, "type")
		if typ != "session_meta" && typ != "turn_context" {
			return nil, nil
		}
		return editStrings(line, func(p []string, s string) (string, bool) {
			if len(p) < 2 || p[0] != "payload" || !codexPathKeys[lastKey(p)] {
				return s, false
			}
			return m.Rebase(s)
		}), nil
	}
}

// lastKey is the innermost object key of a value's path ("[]" elements
// skipped): an array element is named by the key holding the array.
func lastKey(p []string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != "[]" {
			return p[i]
		}
	}
	return ""
}

// codexConfigFile is ~/.codex/config.toml marking the sandbox's
// directories trusted, so the resumed TUI does not stop at its first-run
// screens, and with a base URL its openai_base_url, where Codex reads
// it. A sandbox's own config.toml is kept, the tables it lacks added and
// its openai_base_url replaced.
func codexConfigFile(dirs []string, baseURL string) File {
	table := func(d string) string {
		return "[projects." + string(encodeString(d)) + "]\ntrust_level = \"trusted\"\n"
	}
	merge := func(existing []byte) ([]byte, error) {
		out := append([]byte{}, existing...)
		if baseURL != "" {
			out = setTopLevelKey(out, "openai_base_url", string(encodeString(baseURL)))
		}
		for _, d := range dirs {
			t := table(d)
			header := t[:strings.IndexByte(t, '\n')]
			if strings.Contains(string(out), header) {
				continue
			}
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			if len(out) > 0 {
				out = append(out, '\n')
			}
			out = append(out, t...)
		}
		return out, nil
	}
	body, _ := merge(nil)
	return File{Local: "(generated)", Target: path.Join(SandboxHome, ".codex", "config.toml"), Write: writeBytes(body), Merge: merge}
}

// setTopLevelKey sets key = value (a TOML string) among the top-level
// keys of a TOML document, which precede its first table: a line
// assigning key there is replaced, else the line goes first. Tables and
// everything else stay byte for byte.
func setTopLevelKey(doc []byte, key, value string) []byte {
	line := key + " = " + value + "\n"
	lines := strings.SplitAfter(string(doc), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			break
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			lines[i] = line
			return []byte(strings.Join(lines, ""))
		}
	}
	return append([]byte(line), doc...)
}

// codexBaseURL is the base URL Codex uses here, and where it was found:
// config.toml's top-level openai_base_url, else OPENAI_BASE_URL (which
// Codex read before 0.119, and an older --agent-version still does).
func codexBaseURL(env Env) (raw, from string) {
	p := filepath.Join(codexHome(env), "config.toml")
	if b, err := os.ReadFile(p); err == nil {
		var cfg struct {
			OpenAIBaseURL string `toml:"openai_base_url"`
		}
		if toml.Unmarshal(b, &cfg) == nil && strings.TrimSpace(cfg.OpenAIBaseURL) != "" {
			return strings.TrimSpace(cfg.OpenAIBaseURL), "openai_base_url in " + p
		}
	}
	return env.get("OPENAI_BASE_URL"), "OPENAI_BASE_URL"
}

// codexCredentials takes the first API key set in the environment, else
// the key in $CODEX_HOME/auth.json. A ChatGPT sign-in (tokens only) is
// tied to this machine's login and is not moved.
func codexCredentials(env Env) ([]Credential, string) {
	for _, n := range []string{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"} {
		if c := envCredentials(env, n); len(c) > 0 {
			return c, ""
		}
	}
	p := filepath.Join(codexHome(env), "auth.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "no OPENAI_API_KEY, CODEX_API_KEY or CODEX_ACCESS_TOKEN here and no " + p + "; log in inside the sandbox"
	}
	var auth struct {
		APIKey *string          `json:"OPENAI_API_KEY"`
		Tokens *json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &auth); err != nil {
		return nil, p + " is not valid JSON; log in inside the sandbox"
	}
	if auth.APIKey != nil && *auth.APIKey != "" {
		return []Credential{{Name: "OPENAI_API_KEY", Source: p, Value: *auth.APIKey}}, ""
	}
	return nil, "Codex is signed in with ChatGPT here, which does not move; run `codex login --device-auth` inside the sandbox"
}
