package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Options says what to hand off.
type Options struct {
	Dir     string // the local directory the handoff runs in
	Session string // session id; "" picks the newest recorded in Dir
	All     bool   // send ignored files too
	// StageDir receives the session files as the sandbox will get them;
	// Prepare creates a temporary one when it is "". The caller removes it.
	StageDir string
}

// Plan is a prepared handoff: what goes where, and what runs there.
type Plan struct {
	Tool        string
	CLI         string // the tool's command, checked in the sandbox before anything moves
	Session     *Found
	Tree        *Tree
	Workdir     string // the sandbox directory the tool resumes in
	Files       []StagedFile
	Credentials []Credential // String() shows names and sources only
	Settings    []Setting
	Login       []Step
	Resume      string   // shell command line, run in Workdir
	Egress      []string // host[:port] the sandbox is granted (the tool's model API)
	Provider    string
	Warnings    []string
	StageDir    string

	resume [][]string // Resume's commands, as argv
}

// StagedFile is one session file, rewritten and staged locally.
type StagedFile struct {
	Local  string // where it came from
	Staged string // the staged copy
	Target string // absolute sandbox path
	Size   int64
	Merge  func(existing []byte) ([]byte, error) // see File.Merge
}

// Prepare finds the session, lists the tree and stages the session files.
// Its errors carry a hint (*Error).
func Prepare(ctx context.Context, a Adapter, env Env, o Options) (*Plan, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, hinted(fmt.Errorf("resolve %s: %w", o.Dir, err), "run boxkite handoff from the project's directory")
	}
	root := ProjectRoot(ctx, dir)
	tree, err := ListTree(ctx, root, o.All)
	if err != nil {
		return nil, hinted(err, "check that git works in "+root+", or pass --all to send the directory as it is")
	}
	sandboxRoot := path.Join(SandboxHome, tree.Name)
	found, err := findSession(ctx, a, env, dir, root, o.Session)
	if err != nil {
		return nil, err
	}
	p := &Plan{Tool: a.Name(), Session: found, Tree: tree, Warnings: append([]string{}, found.Warnings...)}
	m, warns := sessionMapping(ctx, root, sandboxRoot, found)
	p.Warnings = append(p.Warnings, warns...)
	b, err := a.Bundle(ctx, env, found, m)
	if err != nil {
		return nil, hinted(err, "hand off another session with --session ID")
	}
	p.Workdir, p.Credentials, p.Settings, p.Login = b.Workdir, b.Credentials, b.Settings, b.Login
	p.Egress, p.Provider = b.Egress, b.Provider
	p.CLI = Agents()[a.Name()].CLI
	p.Warnings = append(p.Warnings, b.Warnings...)
	p.Warnings = append(p.Warnings, tree.Skipped...)
	p.resume = b.Resume
	if p.Resume, err = resumeLine(b.Workdir, b.Resume); err != nil {
		return nil, hinted(err, "the session's id or directory cannot be used in a command; hand off another session with --session ID")
	}
	if err := p.checkEnvNames(); err != nil {
		return nil, err
	}
	p.StageDir = o.StageDir
	if p.StageDir == "" {
		if p.StageDir, err = os.MkdirTemp("", "boxkite-handoff-"); err != nil {
			return nil, hinted(fmt.Errorf("create a staging directory: %w", err), "set TMPDIR to a writable directory")
		}
	}
	for _, f := range b.Files {
		sf, warns, err := stage(p.StageDir, f)
		if errors.Is(err, errNoRecords) && f.Optional {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: left out: it %s", f.Local, errNoRecords))
			continue
		}
		if errors.Is(err, errNoRecords) {
			return p, hinted(err, "the session has nothing to resume from; hand off another one with --session ID")
		}
		if err != nil {
			return p, hinted(err, "check that "+p.StageDir+" is writable and has room (or set TMPDIR)")
		}
		p.Files = append(p.Files, sf)
		p.Warnings = append(p.Warnings, warns...)
	}
	return p, nil
}

// checkEnvNames refuses variable names that could not be assigned in the
// env file (they come from fixed lists, but an env file is shell).
func (p *Plan) checkEnvNames() error {
	names := make([]string, 0, len(p.Credentials)+len(p.Settings)+len(p.Login))
	for _, c := range p.Credentials {
		names = append(names, c.Name)
	}
	for _, s := range p.Settings {
		names = append(names, s.Name)
	}
	for _, s := range p.Login {
		if s.StdinEnv != "" {
			names = append(names, s.StdinEnv)
		}
	}
	for _, n := range names {
		if !envNameRE.MatchString(n) {
			return hinted(fmt.Errorf("variable name %q is not a valid environment variable name", n), "report this: the names come from boxkite's own lists")
		}
	}
	return nil
}

// findSession looks for the session recorded in dir (or below it); run
// from a subdirectory of the project, it looks from the project's root
// as well.
func findSession(ctx context.Context, a Adapter, env Env, dir, root, id string) (*Found, error) {
	found, err := a.Find(ctx, env, dir, id)
	if errors.Is(err, ErrNoSession) && id == "" && root != dir {
		found, err = a.Find(ctx, env, root, id)
	}
	switch {
	case err == nil:
		return found, nil
	case errors.Is(err, ErrNoSession) && id != "":
		return nil, hinted(err, "check the id (the tool lists its sessions), or leave out --session for the newest recorded here")
	case errors.Is(err, ErrNoSession):
		return nil, hinted(err, "run boxkite handoff in the directory the session was recorded in, or name it with --session ID")
	case errors.Is(err, errBadIdent):
		return nil, hinted(err, "session ids are letters, digits, '.', '_' and '-'; copy it from the tool's session list")
	}
	return nil, hinted(err, "check the tool's session files; --dry-run shows what would be sent")
}

// sessionMapping maps the directories the session was recorded in to
// the sandbox: the project root (in each of its spellings) to the
// sandbox's copy of the tree, and every recorded directory outside it
// to the same place, keeping subdirectories in place below it. Only
// absolute paths become rules: a relative or foreign (Windows) path would
// match strings that are not paths at all.
func sessionMapping(ctx context.Context, root, sandboxRoot string, found *Found) (Mapping, []string) {
	var m Mapping
	for _, r := range dirSpellings(root) {
		m.Rules = append(m.Rules, Rule{From: filepath.ToSlash(r), To: sandboxRoot})
	}
	cwds := found.Cwds
	if len(cwds) == 0 && found.Cwd != "" {
		cwds = []string{found.Cwd}
	}
	var outside []string
	for _, c := range cwds {
		if !path.IsAbs(c) {
			continue
		}
		c = path.Clean(c)
		if _, ok := m.Rebase(c); !ok && !slices.Contains(outside, c) {
			outside = append(outside, c)
		}
	}
	// Shortest first: a recorded directory is the base of those below it.
	slices.SortStableFunc(outside, func(a, b string) int { return len(a) - len(b) })
	var moved []string
	for _, c := range outside {
		if _, ok := m.Rebase(c); ok {
			continue
		}
		base := c
		if top := gitTopLevel(ctx, c); top != "" && top != "/" {
			if _, ok := rebase(c, top, top); ok {
				base = top // a subdirectory of another checkout keeps its place
			}
		}
		m.Rules = append(m.Rules, Rule{From: base, To: sandboxRoot})
		moved = append(moved, base)
	}
	if len(moved) == 0 {
		return m, nil
	}
	return m, []string{fmt.Sprintf("session %s was recorded in %s, outside %s; it resumes in the tree of %s, those directories mapped onto %s",
		found.ID, strings.Join(moved, ", "), root, root, sandboxRoot)}
}

// stage writes f under dir at its sandbox path (relative to SandboxHome),
// 0600: a transcript holds everything the agent saw.
func stage(dir string, f File) (StagedFile, []string, error) {
	rel, ok := strings.CutPrefix(f.Target, SandboxHome+"/")
	if !ok || !ValidTarget(f.Target) {
		return StagedFile{}, nil, fmt.Errorf("sandbox path %q is not under %s", f.Target, SandboxHome)
	}
	dst := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return StagedFile{}, nil, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return StagedFile{}, nil, err
	}
	warns, err := f.Write(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, errNoRecords) {
		os.Remove(dst)
		return StagedFile{}, warns, err
	}
	if err != nil {
		return StagedFile{}, warns, fmt.Errorf("stage %s: %w", f.Local, err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return StagedFile{}, warns, err
	}
	return StagedFile{Local: f.Local, Staged: dst, Target: f.Target, Size: fi.Size(), Merge: f.Merge}, warns, nil
}

// ValidTarget reports whether p is a clean absolute path strictly under
// SandboxHome.
func ValidTarget(p string) bool {
	return strings.HasPrefix(p, SandboxHome+"/") && path.Clean(p) == p && strings.IndexByte(p, 0) < 0
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// wordRE is a shell word that needs no quoting: the resume commands
	// are built from these only, after the ids in them were validated.
	wordRE = regexp.MustCompile(`^[A-Za-z0-9._/:=@%+-]+$`)
)

// resumeLine joins the resume commands into one shell line run in workdir.
func resumeLine(workdir string, cmds [][]string) (string, error) {
	if strings.ContainsAny(workdir, "\x00\n\r") || !strings.HasPrefix(workdir, SandboxHome) {
		return "", fmt.Errorf("sandbox directory %q is not usable", workdir)
	}
	parts := []string{"cd " + shellQuote(workdir)}
	for _, argv := range cmds {
		line, err := commandLine(argv)
		if err != nil {
			return "", fmt.Errorf("resume %w", err)
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, " && "), nil
}

// shellQuote quotes s for a POSIX shell: single quotes, with each single
// quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
