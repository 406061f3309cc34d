package handoff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SandboxHome is HOME inside a sandbox; the tools keep their state under it
// (~/.claude, ~/.codex, ~/.local/share/opencode) and the working tree goes
// in a directory below it.
const SandboxHome = "/workspace"

// Env is what adapters read of this machine: the home directory and the
// environment. Tests point it at fixtures.
type Env struct {
	Home   string
	Getenv func(string) string
}

// OSEnv is the real home directory and environment.
func OSEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("find the home directory: %w", err)
	}
	return Env{Home: home, Getenv: os.Getenv}, nil
}

func (e Env) get(name string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(name)
}

// Adapter reads the sessions of one tool.
type Adapter interface {
	// Name is the tool name the CLI takes (claude-code, codex, opencode).
	Name() string
	// Find locates session id, or the newest session recorded in the
	// directory dir when id is "".
	Find(ctx context.Context, env Env, dir, id string) (*Found, error)
	// Bundle lists what must go into the sandbox for f, with paths moved
	// by m, the credentials found, and the resume command.
	Bundle(ctx context.Context, env Env, f *Found, m Mapping) (*Bundle, error)
}

// Adapters returns every adapter, by name.
func Adapters() map[string]Adapter {
	return map[string]Adapter{
		"claude-code": claudeAdapter{},
		"codex":       codexAdapter{},
		"opencode":    opencodeAdapter{},
		"gemini":      geminiAdapter{},
	}
}

// AdapterNames lists the tool names, sorted.
func AdapterNames() []string {
	var names []string
	for n := range Adapters() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Found is one located session.
type Found struct {
	Tool     string
	ID       string
	Path     string    // the session's main file on this machine ("" for opencode)
	Cwd      string    // the directory the session was last recorded in, if known
	Cwds     []string  // every directory it was recorded in, first seen first
	Modified time.Time // when it was last written
	Warnings []string

	export []byte // opencode: the session as `opencode export` printed it
}

// Bundle is what one handoff places in the sandbox besides the tree.
type Bundle struct {
	Files       []File
	Credentials []Credential
	Settings    []Setting  // non-secret variables the tool needs (base URLs, switches)
	Login       []Step     // run before the tool, with the credentials set
	Resume      [][]string // commands run in turn (joined by &&), as argv; every word is validated
	Workdir     string     // sandbox directory the resume command runs in
	Egress      []string   // host or host:port the tool must reach (its model API)
	Provider    string     // opencode: the provider whose credentials were taken
	Warnings    []string
}

// Step is one command run before the tool starts, as argv; with StdinEnv
// set, that variable's value is its standard input (a login that reads a
// key from stdin), so the value never appears in an argv.
type Step struct {
	Argv     []string
	StdinEnv string
}

// Setting is a non-secret environment variable the tool is started with.
type Setting struct {
	Name, Value string
}

// File is one session file to place in the sandbox.
type File struct {
	Local  string // where it comes from, for the plan
	Target string // absolute path in the sandbox, under SandboxHome
	// Write writes the file's content as the sandbox gets it (rewritten
	// where needed) and reports dropped lines as warnings.
	Write func(w io.Writer) (warnings []string, err error)
	// Merge, when set, makes the file a tool's state file that a sandbox
	// may already have (a login, other projects' settings): Transfer calls
	// it with the sandbox's copy (nil when there is none) and sends what
	// it returns. Write gives the file as a new sandbox gets it.
	Merge func(existing []byte) ([]byte, error)
	// Optional files that hold no record are left out with a warning;
	// the session's own transcript is not optional.
	Optional bool
}

// Credential is one environment variable the tool needs in the sandbox.
// Value never leaves this package except into the 0600 env file.
type Credential struct {
	Name   string // environment variable, e.g. ANTHROPIC_API_KEY
	Source string // where it was read, for the plan ("env", a file path)
	Value  string
}

// String keeps the value out of anything that prints a Credential.
func (c Credential) String() string { return c.Name + " (from " + c.Source + ")" }

// Mapping moves paths recorded on this machine to their place in the
// sandbox. The first rule whose From is a prefix of a path wins.
type Mapping struct {
	Rules []Rule
}

// Rule maps a local directory to a sandbox directory.
type Rule struct{ From, To string }

// Rebase returns p moved by the first matching rule.
func (m Mapping) Rebase(p string) (string, bool) {
	for _, r := range m.Rules {
		if q, ok := rebase(p, r.From, r.To); ok {
			return q, true
		}
	}
	return p, false
}

// workdir is where the resume command runs for a session recorded in cwd:
// cwd moved into the sandbox, or the first rule's target.
func (m Mapping) workdir(cwd string) string {
	if d, ok := m.Rebase(cwd); ok {
		return d
	}
	if len(m.Rules) > 0 {
		return m.Rules[0].To
	}
	return SandboxHome
}

// Error is a handoff failure that says what to do about it.
type Error struct {
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// hinted gives err a hint, unless it carries one already.
func hinted(err error, hint string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{Err: err, Hint: hint}
}

// ErrNoSession is what Find returns, wrapped, when no session matches.
var ErrNoSession = errors.New("no session found")

// noSession is a Find failure that matches ErrNoSession and reads as msg.
type noSession struct{ msg string }

func (e noSession) Error() string      { return e.msg }
func (noSession) Is(target error) bool { return target == ErrNoSession }
func noSessionf(format string, args ...any) error {
	return noSession{msg: fmt.Sprintf(format, args...)}
}

// identRE is what an identifier found on this machine (a session id, a
// directory name) must look like before it is put in a command line.
var identRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidIdent reports whether s is safe in a shell word without quoting and
// as a single path element.
func ValidIdent(s string) bool { return identRE.MatchString(s) }

// errBadIdent is an identifier refused by checkIdent.
var errBadIdent = errors.New("is not a valid identifier (letters, digits, '.', '_', '-', at most 128)")

func checkIdent(what, s string) error {
	if !ValidIdent(s) {
		return fmt.Errorf("%s %q %w", what, s, errBadIdent)
	}
	return nil
}

// sandboxPath joins elements under SandboxHome, refusing anything that
// would climb out of it.
func sandboxPath(elems ...string) (string, error) {
	p := path.Join(append([]string{SandboxHome}, elems...)...)
	if p != SandboxHome && !strings.HasPrefix(p, SandboxHome+"/") {
		return "", fmt.Errorf("path %q leaves %s", p, SandboxHome)
	}
	return p, nil
}

// newest returns the element with the latest modification time.
func newest[T any](items []T, mod func(T) time.Time) (T, bool) {
	var best T
	found := false
	for _, it := range items {
		if !found || mod(it).After(mod(best)) {
			best, found = it, true
		}
	}
	return best, found
}

// trustedDirs are the sandbox directories a tool is told to trust: the
// tree's root and the directory the session resumes in.
func trustedDirs(m Mapping, workdir string) []string {
	dirs := []string{workdir}
	if len(m.Rules) > 0 && m.Rules[0].To != workdir {
		dirs = append([]string{m.Rules[0].To}, dirs...)
	}
	return dirs
}

// writeBytes is a File.Write that writes body.
func writeBytes(body []byte) func(io.Writer) ([]string, error) {
	return func(w io.Writer) ([]string, error) {
		_, err := w.Write(body)
		return nil, err
	}
}
