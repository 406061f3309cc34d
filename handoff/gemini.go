package handoff

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// geminiAdapter reads Gemini CLI sessions: JSONL event logs in
// ~/.gemini/tmp/<project slug>/chats/session-<time>-<id8>.jsonl, the slug
// registered for the project root in ~/.gemini/projects.json. `gemini
// --resume <id>` lists the chats of the current project only, so the file
// goes under the slug of the sandbox directory, registered there too.
type geminiAdapter struct{}

func (geminiAdapter) Name() string { return "gemini" }

func geminiDir(env Env) string {
	if d := env.get("GEMINI_CLI_HOME"); d != "" {
		return filepath.Join(d, ".gemini")
	}
	return filepath.Join(env.Home, ".gemini")
}

// geminiChat is one session file and the project root it belongs to.
type geminiChat struct {
	path, root, id string
	mod            time.Time
}

func (a geminiAdapter) Find(_ context.Context, env Env, dir, id string) (*Found, error) {
	g := geminiDir(env)
	if id != "" {
		if err := checkIdent("session id", id); err != nil {
			return nil, err
		}
	}
	projects, err := geminiProjects(g)
	if err != nil {
		return nil, err
	}
	var cands []geminiChat
	for root, slug := range projects {
		if id == "" && !sameDir(dir, root) && !sameDir(root, dir) {
			continue
		}
		for _, c := range geminiChats(filepath.Join(g, "tmp", slug, "chats")) {
			if id == "" || c.id == id {
				c.root = root
				cands = append(cands, c)
			}
		}
	}
	best, ok := newest(cands, func(c geminiChat) time.Time { return c.mod })
	if !ok {
		if id != "" {
			return nil, noSessionf("no Gemini CLI session %s under %s", id, g)
		}
		return nil, noSessionf("no Gemini CLI session recorded in %s or above it (looked under %s)", dir, g)
	}
	if err := checkIdent("session id", best.id); err != nil {
		return nil, err
	}
	return &Found{Tool: a.Name(), ID: best.id, Path: best.path, Cwd: best.root, Cwds: geminiDirs(best), Modified: best.mod}, nil
}

// geminiDirs are the directories a chat records: its project root and the
// workspace directories of its metadata (and of "$set" patches to it).
func geminiDirs(c geminiChat) []string {
	dirs := []string{c.root}
	f, err := os.Open(c.path)
	if err != nil {
		return dirs
	}
	defer f.Close()
	_, _ = copyLines(f, io.Discard, c.path, func(_ int, line []byte) ([]byte, error) {
		editStrings(line, func(p []string, s string) (string, bool) {
			if (equalPath(p, []string{"directories", "[]"}) || equalPath(p, []string{"$set", "directories", "[]"})) && !slices.Contains(dirs, s) {
				dirs = append(dirs, s)
			}
			return s, false
		})
		return nil, nil
	})
	// The root stays last: it is where the session resumes.
	return append(dirs[1:], dirs[0])
}

// geminiProjects reads projects.json: project root → slug. Slugs name a
// directory, so anything that is not a plain identifier is ignored.
func geminiProjects(g string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(g, "projects.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(g, "projects.json"), err)
	}
	out := map[string]string{}
	for root, slug := range reg.Projects {
		if ValidIdent(slug) {
			out[root] = slug
		}
	}
	return out, nil
}

// geminiChats lists the session files of one chats directory with the
// session id of their first (metadata) line.
func geminiChats(dir string) []geminiChat {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []geminiChat
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "session-") || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		line, ok := firstLine(f)
		f.Close()
		if !ok {
			continue
		}
		if id, ok := stringAt(line, "sessionId"); ok {
			out = append(out, geminiChat{path: p, id: id, mod: fi.ModTime()})
		}
	}
	return out
}

// geminiSlug is the project directory name Gemini CLI gives a root: its
// base name lowercased, runs of anything but [a-z0-9] as one "-".
func geminiSlug(root string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(path.Base(root)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimSuffix(b.String(), "-")
	if s == "" {
		return "project"
	}
	return s
}

func (a geminiAdapter) Bundle(_ context.Context, env Env, f *Found, m Mapping) (*Bundle, error) {
	workdir := m.workdir(f.Cwd)
	slug := geminiSlug(workdir)
	chats, err := sandboxPath(".gemini", "tmp", slug, "chats")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(workdir))
	edit := geminiEdit(m, hex.EncodeToString(sum[:]))
	b := &Bundle{Workdir: workdir, Resume: [][]string{{"gemini", "--resume", f.ID}}}
	main := jsonlFile(f.Path, path.Join(chats, filepath.Base(f.Path)), false, edit)
	main.Optional = false
	b.Files = append(b.Files, main)
	// Subagent chats sit in a folder named after the parent session.
	sub := filepath.Join(filepath.Dir(f.Path), f.ID)
	subs, _ := filepath.Glob(filepath.Join(sub, "*.jsonl"))
	for _, p := range subs {
		b.Files = append(b.Files, jsonlFile(p, path.Join(chats, f.ID, filepath.Base(p)), false, edit))
	}
	b.Files = append(b.Files,
		geminiStateFile("projects.json", func(s map[string]any) { object(s, "projects")[workdir] = slug }),
		generated(path.Join(SandboxHome, ".gemini", "tmp", slug, ".project_root"), []byte(workdir)),
		geminiStateFile("trustedFolders.json", func(s map[string]any) {
			for _, d := range trustedDirs(m, workdir) {
				s[d] = "TRUST_FOLDER"
			}
		}))
	b.launch(LaunchFor(a.Name(), env, ""))
	carried, warn := geminiCarriedSettings(env)
	if warn != "" {
		b.Warnings = append(b.Warnings, warn)
	}
	// Without a chosen sign-in method the resume stops at a picker.
	auth := geminiAuthType(env, b.Credentials)
	if auth != "" || len(carried) > 0 {
		b.Files = append(b.Files, geminiStateFile("settings.json", func(s map[string]any) {
			for _, section := range geminiCarriedSections {
				if vals, ok := carried[section]; ok {
					maps.Copy(object(s, section), vals)
				}
			}
			if auth != "" {
				object(object(s, "security"), "auth")["selectedType"] = auth
			}
		}))
	}
	return b, nil
}

// geminiCarriedSections are the sections of the local settings.json that
// go along: how the agent behaves (general: retries, checkpointing, …;
// model: which model, compression). The others stay behind: MCP servers,
// tools and hooks name this machine's commands and may hold secrets, and
// the sign-in method is chosen for the sandbox (geminiAuthType).
var geminiCarriedSections = []string{"general", "model"}

// geminiCarriedSettings reads the carried sections of the local
// settings.json; a file Gemini CLI reads but encoding/json does not (it
// allows comments) is reported and left behind.
func geminiCarriedSettings(env Env) (map[string]map[string]any, string) {
	p := filepath.Join(geminiDir(env), "settings.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, ""
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Sprintf("%s is not plain JSON (comments?): its general and model settings stay behind", p)
	}
	out := map[string]map[string]any{}
	for _, section := range geminiCarriedSections {
		raw, ok := s[section]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var vals map[string]any
		if dec.Decode(&vals) != nil {
			return nil, fmt.Sprintf("%s: %q is not an object: its general and model settings stay behind", p, section)
		}
		out[section] = vals
	}
	return out, ""
}

// geminiStateFile is a JSON file of ~/.gemini that set edits; a sandbox's
// own copy is kept with set applied to it.
func geminiStateFile(name string, set func(map[string]any)) File {
	merge := func(existing []byte) ([]byte, error) { return mergeJSON(existing, set) }
	body, _ := merge(nil)
	return File{Local: "(generated)", Target: path.Join(SandboxHome, ".gemini", name), Write: writeBytes(body), Merge: merge}
}

// geminiAuthType is the sign-in method the sandbox's Gemini CLI uses: an
// API key's (gemini-api-key for GEMINI_API_KEY), or the method chosen
// here when it is one a key serves; "" when no key goes along.
func geminiAuthType(env Env, creds []Credential) string {
	if len(creds) == 0 {
		return ""
	}
	var s struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
	}
	if b, err := os.ReadFile(filepath.Join(geminiDir(env), "settings.json")); err == nil && json.Unmarshal(b, &s) == nil {
		switch t := s.Security.Auth.SelectedType; t {
		case "gemini-api-key", "vertex-ai":
			return t
		}
	}
	if creds[0].Name == "GEMINI_API_KEY" {
		return "gemini-api-key"
	}
	return ""
}

// geminiEdit moves the metadata's directories (also when a "$set" line
// patches them) and gives projectHash the sandbox root's hash.
func geminiEdit(m Mapping, hash string) lineEdit {
	return func(_ int, line []byte) ([]byte, error) {
		return editStrings(line, func(p []string, s string) (string, bool) {
			switch {
			case equalPath(p, []string{"projectHash"}):
				return hash, true
			case equalPath(p, []string{"directories", "[]"}), equalPath(p, []string{"$set", "directories", "[]"}):
				return m.Rebase(s)
			}
			return s, false
		}), nil
	}
}

// generated is a file the handoff writes rather than copies.
func generated(target string, body []byte) File {
	return File{Local: "(generated)", Target: target, Write: func(w io.Writer) ([]string, error) {
		_, err := w.Write(body)
		return nil, err
	}}
}
