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
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// opencodeAdapter moves opencode sessions through its own export/import
// format: `opencode export <id>` here, `opencode import <file>` in the
// sandbox, which re-homes the session to the importing directory. Its
// SQLite database is never copied (it holds every project and absolute
// worktrees).
type opencodeAdapter struct{}

func (opencodeAdapter) Name() string { return "opencode" }

// opencodeMaxExport bounds the export read into memory: it is one JSON
// document, which opencode itself builds whole.
const opencodeMaxExport = 1 << 30

// opencodeListed is one entry of `opencode session list --format json`.
type opencodeListed struct {
	ID        string `json:"id"`
	Directory string `json:"directory"`
	Updated   int64  `json:"updated"` // epoch ms
}

func (a opencodeAdapter) Find(ctx context.Context, env Env, dir, id string) (*Found, error) {
	snap, err := opencodeSnapshot(env)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(string(snap))
	env = snap.env(env)
	if id == "" {
		out, err := runOpencode(ctx, env, "session", "list", "--format", "json")
		if err != nil {
			return nil, err
		}
		var list []opencodeListed
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, fmt.Errorf("read `opencode session list` output: %w", err)
		}
		var here []opencodeListed
		for _, s := range list {
			if sameDir(s.Directory, dir) {
				here = append(here, s)
			}
		}
		best, ok := newest(here, func(s opencodeListed) time.Time { return time.UnixMilli(s.Updated) })
		if !ok {
			return nil, noSessionf("no opencode session recorded in %s or below (opencode session list shows none)", dir)
		}
		id = best.ID
	}
	if err := checkIdent("session id", id); err != nil {
		return nil, err
	}
	exp, err := runOpencode(ctx, env, "export", id)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			return nil, noSessionf("opencode has no session %s: %v", id, err)
		}
		return nil, err
	}
	// Export may print chatter before the document.
	if i := bytes.IndexByte(exp, '{'); i > 0 {
		exp = exp[i:]
	}
	if !json.Valid(exp) {
		return nil, fmt.Errorf("`opencode export %s` did not print a JSON document", id)
	}
	if got, _ := stringAt(exp, "info", "id"); got != id {
		return nil, fmt.Errorf("`opencode export %s` printed session %q", id, got)
	}
	cwd, _ := stringAt(exp, "info", "directory")
	f := &Found{Tool: a.Name(), ID: id, Cwd: cwd, Cwds: opencodeDirs(exp, cwd), export: exp}
	if ms, ok := opencodeUpdated(exp); ok {
		f.Modified = time.UnixMilli(ms)
	}
	return f, nil
}

func opencodeUpdated(exp []byte) (int64, bool) {
	var doc struct {
		Info struct {
			Time struct {
				Updated int64 `json:"updated"`
			} `json:"time"`
		} `json:"info"`
	}
	if json.Unmarshal(exp, &doc) != nil || doc.Info.Time.Updated == 0 {
		return 0, false
	}
	return doc.Info.Time.Updated, true
}

// opencodeData is opencode's data directory: its database, logs and, in
// versions before 1.2, the JSON storage the database replaced.
func opencodeData(env Env) string {
	data := env.get("XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(env.Home, ".local", "share")
	}
	return filepath.Join(data, "opencode")
}

// snapshotDir is a private copy of opencode's data directory.
type snapshotDir string

// env is base with opencode pointed at the copy: its data and state
// (locks) there, so nothing it writes as it opens them lands in the
// user's own.
func (d snapshotDir) env(base Env) Env {
	return Env{Home: base.Home, Getenv: func(k string) string {
		switch k {
		case "XDG_DATA_HOME":
			return filepath.Join(string(d), "data")
		case "XDG_STATE_HOME":
			return filepath.Join(string(d), "state")
		}
		return base.get(k)
	}}
}

// opencodeSnapshot copies what opencode reads sessions from (its
// database with the WAL beside it, and the JSON storage of older
// versions) to a fresh 0700 directory, which the caller removes. opencode
// migrates, checkpoints and logs when it opens its data; run on a copy,
// listing and exporting a session never change the user's files.
func opencodeSnapshot(env Env) (snapshotDir, error) {
	src := opencodeData(env)
	tmp, err := os.MkdirTemp("", "boxkite-opencode-")
	if err != nil {
		return "", &Error{Err: fmt.Errorf("copy opencode's data: %w", err), Hint: "set TMPDIR to a writable directory"}
	}
	dst := filepath.Join(tmp, "data", "opencode")
	err = os.MkdirAll(dst, 0o700)
	for _, name := range []string{"opencode.db", "opencode.db-wal", "opencode.db-shm", "storage"} {
		if err == nil {
			err = copyTree(filepath.Join(src, name), filepath.Join(dst, name))
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", &Error{Err: fmt.Errorf("copy opencode's data from %s: %w", src, err), Hint: "check that opencode's data is readable and " + os.TempDir() + " has room"}
	}
	return snapshotDir(tmp), nil
}

// copyTree copies a file or a directory tree (regular files only); a
// missing source is no error.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// runOpencode runs the local opencode with args (validated identifiers
// only; no shell is involved) and returns its standard output.
func runOpencode(ctx context.Context, env Env, args ...string) ([]byte, error) {
	bin := env.get("BOXKITE_OPENCODE")
	if bin == "" {
		p, err := exec.LookPath("opencode")
		if err != nil {
			return nil, &Error{
				Err:  errors.New("opencode is not installed here; it is needed to export the session"),
				Hint: "install opencode on this machine, or set BOXKITE_OPENCODE to its binary",
			}
		}
		bin = p
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = os.Environ()
	for _, k := range []string{"XDG_DATA_HOME", "XDG_STATE_HOME"} {
		if v := env.get(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Its standard output is a file, not a pipe: opencode (a Bun binary)
	// exits without draining a pipe the reader has not emptied yet, so an
	// export read through one stops at a multiple of 64 KiB.
	out, err := os.CreateTemp("", "boxkite-opencode-*")
	if err != nil {
		return nil, fmt.Errorf("opencode %s: %w", strings.Join(args, " "), err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		err = fmt.Errorf("opencode %s: %w", strings.Join(args, " "), err)
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w (%s)", err, msg)
		}
		return nil, err
	}
	if fi, err := out.Stat(); err != nil {
		return nil, fmt.Errorf("opencode %s: %w", strings.Join(args, " "), err)
	} else if fi.Size() > opencodeMaxExport {
		return nil, fmt.Errorf("opencode %s: output over %d bytes", strings.Join(args, " "), opencodeMaxExport)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("opencode %s: %w", strings.Join(args, " "), err)
	}
	return io.ReadAll(out)
}

func (a opencodeAdapter) Bundle(_ context.Context, env Env, f *Found, m Mapping) (*Bundle, error) {
	target, err := sandboxPath(".opencode-handoff", f.ID+".json")
	if err != nil {
		return nil, err
	}
	exp := opencodeEdit(f.export, m)
	b := &Bundle{
		Workdir: m.workdir(f.Cwd),
		Resume:  [][]string{{"opencode", "import", target}, {"opencode", "--session", f.ID}},
	}
	b.Files = append(b.Files, File{Local: "opencode export " + f.ID, Target: target, Write: writeBytes(exp)})
	b.Provider = opencodeProvider(exp)
	b.launch(LaunchFor(a.Name(), env, b.Provider))
	return b, nil
}

// opencodeAPIs are the model API hosts (and base-URL variables, which
// opencode's provider libraries read) of the providers boxkite knows.
var opencodeAPIs = map[string]struct{ host, baseEnv string }{
	"anthropic":  {"api.anthropic.com", "ANTHROPIC_BASE_URL"},
	"openai":     {"api.openai.com", "OPENAI_BASE_URL"},
	"google":     {"generativelanguage.googleapis.com", ""},
	"openrouter": {"openrouter.ai", ""},
	"opencode":   {"opencode.ai", ""},
	"groq":       {"api.groq.com", ""},
	"mistral":    {"api.mistral.ai", ""},
	"xai":        {"api.x.ai", ""},
	"deepseek":   {"api.deepseek.com", ""},
}

// opencodeProvider is the provider of the session's last message.
func opencodeProvider(exp []byte) string {
	provider := ""
	editStrings(exp, func(p []string, s string) (string, bool) {
		if equalPath(p, []string{"messages", "[]", "info", "providerID"}) || equalPath(p, []string{"messages", "[]", "info", "model", "providerID"}) {
			provider = s
		}
		return s, false
	})
	return provider
}

// opencodeDirs are the directories an export records: the session's
// directory and each assistant message's path (an object of cwd and root,
// or in some versions a plain string), the session's own last.
func opencodeDirs(exp []byte, dir string) []string {
	var dirs []string
	editStrings(exp, func(p []string, s string) (string, bool) {
		if opencodePath(p) && s != dir && !slices.Contains(dirs, s) {
			dirs = append(dirs, s)
		}
		return s, false
	})
	if dir != "" {
		dirs = append(dirs, dir)
	}
	return dirs
}

// opencodePath reports whether the value at p of an export is a path.
func opencodePath(p []string) bool {
	switch {
	case equalPath(p, []string{"info", "directory"}),
		len(p) >= 2 && p[0] == "info" && p[1] == "path",
		equalPath(p, []string{"messages", "[]", "info", "path"}),
		equalPath(p, []string{"messages", "[]", "info", "path", "cwd"}),
		equalPath(p, []string{"messages", "[]", "info", "path", "root"}):
		return true
	}
	return false
}

// opencodeEdit moves the session's directory and every assistant
// message's path.cwd and path.root. Import overrides the session's
// directory anyway; the messages' paths it keeps.
func opencodeEdit(exp []byte, m Mapping) []byte {
	return editStrings(exp, func(p []string, s string) (string, bool) {
		if opencodePath(p) {
			return m.Rebase(s)
		}
		return s, false
	})
}

// opencodeCredentials passes the auth.json entry of the provider the
// session last used, API keys only (an OAuth login is tied to this
// machine), as OPENCODE_AUTH_CONTENT.
func opencodeCredentials(env Env, provider string) ([]Credential, string) {
	p := filepath.Join(opencodeData(env), "auth.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "no " + p + "; log in inside the sandbox (`opencode auth login`)"
	}
	var auth map[string]json.RawMessage
	if err := json.Unmarshal(b, &auth); err != nil {
		return nil, p + " is not valid JSON; log in inside the sandbox"
	}
	entry, ok := auth[provider]
	var kind struct {
		Type string `json:"type"`
	}
	if !ok || json.Unmarshal(entry, &kind) != nil || kind.Type != "api" {
		return nil, fmt.Sprintf("no API key for provider %q in %s; log in inside the sandbox", provider, p)
	}
	content, err := json.Marshal(map[string]json.RawMessage{provider: entry})
	if err != nil {
		return nil, err.Error()
	}
	return []Credential{{Name: "OPENCODE_AUTH_CONTENT", Source: p, Value: string(content)}}, ""
}
