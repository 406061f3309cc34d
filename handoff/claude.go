package handoff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf16"
)

// claudeAdapter reads Claude Code sessions: one JSONL transcript per
// session in <config>/projects/<encoded cwd>/<id>.jsonl, beside an <id>/
// folder of companion files (subagent transcripts, spilled tool results).
// Resume looks only in the directory of the cwd it is started in, so the
// file goes under the encoding of the sandbox's working directory.
type claudeAdapter struct{}

func (claudeAdapter) Name() string { return "claude-code" }

// claudeMaxDirName is where Claude Code starts shortening project
// directory names with a hash that differs between its builds; such names
// are found by scanning, never computed.
const claudeMaxDirName = 200

// claudeProjectDir encodes a working directory the way Claude Code names
// its project directory: every UTF-16 code unit that is not an ASCII letter
// or digit becomes "-", without collapsing runs (an emoji, a surrogate
// pair, becomes "--").
func claudeProjectDir(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	b := make([]byte, len(units))
	for i, u := range units {
		switch {
		case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
			b[i] = byte(u)
		default:
			b[i] = '-'
		}
	}
	return string(b)
}

func claudeConfigDir(env Env) string {
	if d := env.get("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(env.Home, ".claude")
}

// claudeSession is one transcript file on disk.
type claudeSession struct {
	path string
	mod  time.Time
}

func (a claudeAdapter) Find(_ context.Context, env Env, dir, id string) (*Found, error) {
	projects := filepath.Join(claudeConfigDir(env), "projects")
	if id != "" {
		if err := checkIdent("session id", id); err != nil {
			return nil, err
		}
	}
	var cands []claudeSession
	for _, d := range claudeDirsFor(projects, dir) {
		cands = append(cands, claudeSessions(d, id)...)
	}
	if len(cands) == 0 {
		// The directory may be named by a hash or another spelling of the
		// path: scan every project, matching the id or the recorded cwd.
		all, err := os.ReadDir(projects)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", projects, err)
		}
		var every []claudeSession
		for _, e := range all {
			every = append(every, claudeSessions(filepath.Join(projects, e.Name()), id)...)
		}
		// Newest first, reading transcripts only until one matches: the
		// cwd is in the lines, and a corpus may hold gigabytes of them.
		slices.SortFunc(every, func(a, b claudeSession) int { return b.mod.Compare(a.mod) })
		for _, s := range every {
			if id != "" || sameDir(lastOf(claudeCwds(s.path)), dir) {
				cands = append(cands, s)
				break
			}
		}
	}
	best, ok := newest(cands, func(s claudeSession) time.Time { return s.mod })
	if !ok {
		if id != "" {
			return nil, noSessionf("no Claude Code session %s under %s", id, projects)
		}
		return nil, noSessionf("no Claude Code session recorded in %s or below (looked under %s)", dir, projects)
	}
	cwds := claudeCwds(best.path)
	f := &Found{
		Tool: a.Name(), ID: strings.TrimSuffix(filepath.Base(best.path), ".jsonl"),
		Path: best.path, Cwd: lastOf(cwds), Cwds: cwds, Modified: best.mod,
	}
	if err := checkIdent("session id", f.ID); err != nil {
		return nil, err
	}
	if claudeBusy(claudeConfigDir(env), f.ID) {
		f.Warnings = append(f.Warnings, "Claude Code is still running this session here; what it writes from now on stays behind (exit it first)")
	}
	return f, nil
}

// claudeDirsFor lists the project directories that may hold dir's
// sessions: its encoding, and for long paths every directory sharing the
// encoding's first 200 characters.
func claudeDirsFor(projects, dir string) []string {
	var encs []string
	for _, d := range dirSpellings(dir) {
		encs = append(encs, claudeProjectDir(d))
	}
	var out []string
	for _, enc := range encs {
		if len(enc) <= claudeMaxDirName {
			out = append(out, filepath.Join(projects, enc))
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(projects, globQuote(enc[:claudeMaxDirName])+"-*"))
		out = append(out, matches...)
	}
	return out
}

// claudeSessions lists the transcripts in one project directory (not the
// legacy agent-*.jsonl subagent files), or just id's.
func claudeSessions(dir, id string) []claudeSession {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []claudeSession
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "agent-") {
			continue
		}
		if id != "" && name != id+".jsonl" {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > 0 {
			out = append(out, claudeSession{filepath.Join(dir, name), fi.ModTime()})
		}
	}
	return out
}

// claudeCwds lists the cwds a transcript records, first seen first; the
// last one recorded is the authoritative project path (the directory
// name is a lossy encoding of it).
func claudeCwds(p string) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var cwds []string
	last := ""
	_, _ = copyLines(f, io.Discard, p, func(_ int, line []byte) ([]byte, error) {
		if c, ok := stringAt(line, "cwd"); ok && c != "" {
			if !slices.Contains(cwds, c) {
				cwds = append(cwds, c)
			}
			last = c
		}
		return nil, nil
	})
	// The newest cwd last, wherever it was first seen.
	if i := slices.Index(cwds, last); i >= 0 && i != len(cwds)-1 {
		cwds = append(slices.Delete(cwds, i, i+1), last)
	}
	return cwds
}

// lastOf is the last element of s, or "".
func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// claudeBusy reports whether a running Claude Code registered id as busy
// in <config>/sessions/<pid>.json.
func claudeBusy(config, id string) bool {
	files, _ := filepath.Glob(filepath.Join(config, "sessions", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var s struct {
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
		}
		if json.Unmarshal(b, &s) == nil && s.SessionID == id && s.Status == "busy" {
			return true
		}
	}
	return false
}

func (a claudeAdapter) Bundle(_ context.Context, env Env, f *Found, m Mapping) (*Bundle, error) {
	workdir := m.workdir(f.Cwd)
	enc := claudeProjectDir(workdir)
	if len(enc) > claudeMaxDirName {
		return nil, fmt.Errorf("sandbox directory %s is too long for Claude Code's project directory names", workdir)
	}
	target, err := sandboxPath(".claude", "projects", enc)
	if err != nil {
		return nil, err
	}
	// Spilled tool results are named by absolute path inside the config
	// directory; they move with the project directory.
	srcProject := filepath.Dir(f.Path)
	edit := claudeEdit(m, filepath.ToSlash(srcProject)+"/", target+"/")
	b := &Bundle{Workdir: workdir, Resume: [][]string{{"claude", "--resume", f.ID}}}
	main := jsonlFile(f.Path, path.Join(target, f.ID+".jsonl"), false, edit)
	main.Optional = false
	b.Files = append(b.Files, main)

	companion := filepath.Join(srcProject, f.ID)
	err = filepath.WalkDir(companion, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == companion {
				return filepath.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(srcProject, p)
		if err != nil {
			return err
		}
		b.Files = append(b.Files, jsonlFile(p, path.Join(target, filepath.ToSlash(rel)), !strings.HasSuffix(p, ".jsonl"), edit))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", companion, err)
	}
	// The 2.0 layout kept subagent transcripts flat beside the session;
	// their first line names the parent.
	legacy, _ := filepath.Glob(filepath.Join(srcProject, "agent-*.jsonl"))
	for _, p := range legacy {
		if claudeParent(p) == f.ID {
			b.Files = append(b.Files, jsonlFile(p, path.Join(target, filepath.Base(p)), false, edit))
		}
	}
	b.launch(LaunchFor(a.Name(), env, ""))
	b.Files = append(b.Files, claudeStateFile(trustedDirs(m, workdir), approvedKey(env)))
	return b, nil
}

// approvedKey is what Claude Code records of an API key it was told to
// use (its last 20 characters), so the resumed session does not stop to
// ask; "" without an ANTHROPIC_API_KEY.
func approvedKey(env Env) string {
	k := env.get("ANTHROPIC_API_KEY")
	if len(k) > 20 {
		k = k[len(k)-20:]
	}
	return k
}

// claudeEdit rewrites a transcript line: the top-level cwd moves with m,
// and any string naming the old project directory inside the config
// directory names the new one. Nothing else changes: ids, signatures and
// text that merely mentions a path stay as recorded.
func claudeEdit(m Mapping, oldProject, newProject string) lineEdit {
	return func(_ int, line []byte) ([]byte, error) {
		return editStrings(line, func(p []string, s string) (string, bool) {
			if len(p) == 1 && p[0] == "cwd" {
				return m.Rebase(s)
			}
			if strings.Contains(s, oldProject) {
				return strings.ReplaceAll(s, oldProject, newProject), true
			}
			return s, false
		}), nil
	}
}

func claudeParent(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, ok := firstLine(f)
	if !ok {
		return ""
	}
	id, _ := stringAt(line, "sessionId")
	return id
}

// claudeStateFile is ~/.claude.json in the sandbox: onboarding done, the
// sandbox's directories trusted and the API key approved, so the
// interactive resume does not stop at first-run screens. A sandbox's own
// file (a login made there, other projects' settings) is kept: only these
// keys are set in it.
func claudeStateFile(dirs []string, keySuffix string) File {
	merge := func(existing []byte) ([]byte, error) {
		return mergeJSON(existing, func(state map[string]any) {
			state["hasCompletedOnboarding"] = true
			projects := object(state, "projects")
			for _, d := range dirs {
				object(projects, d)["hasTrustDialogAccepted"] = true
			}
			if keySuffix == "" {
				return
			}
			resp := object(state, "customApiKeyResponses")
			approved, _ := resp["approved"].([]any)
			if !slices.Contains(approved, any(keySuffix)) {
				resp["approved"] = append(approved, keySuffix)
			}
			if rejected, ok := resp["rejected"].([]any); ok {
				resp["rejected"] = slices.DeleteFunc(rejected, func(v any) bool { return v == keySuffix })
			} else {
				resp["rejected"] = []any{}
			}
		})
	}
	body, _ := merge(nil)
	return File{Local: "(generated)", Target: path.Join(SandboxHome, ".claude.json"), Write: writeBytes(body), Merge: merge}
}

// mergeJSON decodes a JSON object (none when existing is empty), lets set
// change it, and encodes it again without HTML escaping.
func mergeJSON(existing []byte, set func(map[string]any)) ([]byte, error) {
	state := map[string]any{}
	if len(bytes.TrimSpace(existing)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(existing))
		dec.UseNumber()
		if err := dec.Decode(&state); err != nil {
			return nil, fmt.Errorf("the sandbox's copy is not a JSON object: %w", err)
		}
	}
	set(state)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(state); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// object returns m[key] as an object, replacing anything else there.
func object(m map[string]any, key string) map[string]any {
	o, ok := m[key].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

// jsonlFile is a session file copied from local: raw, or line by line
// through edit.
func jsonlFile(local, target string, raw bool, edit lineEdit) File {
	return File{Local: local, Target: target, Optional: true, Write: func(w io.Writer) ([]string, error) {
		r, err := os.Open(local)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if raw {
			_, err := io.Copy(w, r)
			return nil, err
		}
		st, err := copyLines(r, w, local, edit)
		return st.Warnings, err
	}}
}

// envCredentials takes every named variable that is set.
func envCredentials(env Env, names ...string) []Credential {
	var out []Credential
	for _, n := range names {
		if v := env.get(n); v != "" {
			out = append(out, Credential{Name: n, Source: "environment", Value: v})
		}
	}
	return out
}

// dirSpellings are the spellings of dir a tool may have recorded: as
// given, and with symlinks resolved (Claude Code records the real path:
// /tmp/x is /private/tmp/x on macOS).
func dirSpellings(dir string) []string {
	out := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != out[0] {
		out = append(out, real)
	}
	return out
}

// sameDir reports whether a session recorded in cwd belongs to dir: cwd
// is dir or below it (the whole tree under dir goes along), in any
// spelling of either.
func sameDir(cwd, dir string) bool {
	if cwd == "" || dir == "" {
		return false
	}
	for _, x := range dirSpellings(cwd) {
		for _, y := range dirSpellings(dir) {
			if _, ok := rebase(x, y, y); ok {
				return true
			}
		}
	}
	return false
}

// globQuote escapes glob metacharacters (the encoding leaves only
// letters, digits and dashes, but the projects path may hold any).
func globQuote(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}
