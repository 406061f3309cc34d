package handoff

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
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
	Session     *Found
	Tree        *Tree
	Workdir     string // the sandbox directory the tool resumes in
	Files       []StagedFile
	Credentials []Credential // String() shows names and sources only
	Resume      string       // shell command line, run in Workdir
	Warnings    []string
	StageDir    string
}

// StagedFile is one session file, rewritten and staged locally.
type StagedFile struct {
	Local  string // where it came from
	Staged string // the staged copy
	Target string // absolute sandbox path
	Size   int64
}

// Prepare finds the session, lists the tree and stages the session files.
func Prepare(ctx context.Context, a Adapter, env Env, o Options) (*Plan, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", o.Dir, err)
	}
	root := ProjectRoot(ctx, dir)
	tree, err := ListTree(ctx, root, o.All)
	if err != nil {
		return nil, err
	}
	sandboxRoot := path.Join(SandboxHome, tree.Name)
	var m Mapping
	for _, r := range dirSpellings(root) {
		m.Rules = append(m.Rules, Rule{From: filepath.ToSlash(r), To: sandboxRoot})
	}
	found, err := a.Find(ctx, env, dir, o.Session)
	if err != nil {
		return nil, err
	}
	p := &Plan{Tool: a.Name(), Session: found, Tree: tree, Warnings: append([]string{}, found.Warnings...)}
	if _, inside := m.Rebase(found.Cwd); found.Cwd != "" && !inside {
		// A session recorded elsewhere still resumes in the tree sent.
		p.Warnings = append(p.Warnings, fmt.Sprintf("session %s was recorded in %s, not in %s; it resumes in the tree of %s", found.ID, found.Cwd, root, root))
		m.Rules = append(m.Rules, Rule{From: found.Cwd, To: sandboxRoot})
	}
	b, err := a.Bundle(ctx, env, found, m)
	if err != nil {
		return nil, err
	}
	p.Workdir, p.Credentials = b.Workdir, b.Credentials
	p.Warnings = append(p.Warnings, b.Warnings...)
	p.Warnings = append(p.Warnings, tree.Skipped...)
	if p.Resume, err = resumeLine(b.Workdir, b.Resume); err != nil {
		return nil, err
	}
	for _, c := range p.Credentials {
		if !envNameRE.MatchString(c.Name) {
			return nil, fmt.Errorf("credential name %q is not a valid environment variable name", c.Name)
		}
	}
	p.StageDir = o.StageDir
	if p.StageDir == "" {
		if p.StageDir, err = os.MkdirTemp("", "boxkite-handoff-"); err != nil {
			return nil, fmt.Errorf("create a staging directory: %w", err)
		}
	}
	for _, f := range b.Files {
		sf, warns, err := stage(p.StageDir, f)
		if err != nil {
			return p, err
		}
		p.Files = append(p.Files, sf)
		p.Warnings = append(p.Warnings, warns...)
	}
	return p, nil
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
	if err != nil {
		return StagedFile{}, warns, fmt.Errorf("stage %s: %w", f.Local, err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return StagedFile{}, warns, err
	}
	return StagedFile{Local: f.Local, Staged: dst, Target: f.Target, Size: fi.Size()}, warns, nil
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
		for _, w := range argv {
			if !wordRE.MatchString(w) {
				return "", fmt.Errorf("resume command word %q is not a plain shell word", w)
			}
		}
		parts = append(parts, strings.Join(argv, " "))
	}
	return strings.Join(parts, " && "), nil
}

// shellQuote quotes s for a POSIX shell: single quotes, with each single
// quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
