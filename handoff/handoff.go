package handoff

import (
	"context"
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
	Cwd      string    // the directory the session was recorded in, if known
	Modified time.Time // when it was last written
	Warnings []string

	export []byte // opencode: the session as `opencode export` printed it
}

// Bundle is what one handoff places in the sandbox besides the tree.
type Bundle struct {
	Files       []File
	Credentials []Credential
	Resume      [][]string // commands run in turn (joined by &&), as argv; every word is validated
	Workdir     string     // sandbox directory the resume command runs in
	Warnings    []string
}

// File is one session file to place in the sandbox.
type File struct {
	Local  string // where it comes from, for the plan
	Target string // absolute path in the sandbox, under SandboxHome
	// Write writes the file's content as the sandbox gets it (rewritten
	// where needed) and reports dropped lines as warnings.
	Write func(w io.Writer) (warnings []string, err error)
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

// identRE is what an identifier found on this machine (a session id, a
// directory name) must look like before it is put in a command line.
var identRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidIdent reports whether s is safe in a shell word without quoting and
// as a single path element.
func ValidIdent(s string) bool { return identRE.MatchString(s) }

func checkIdent(what, s string) error {
	if !ValidIdent(s) {
		return fmt.Errorf("%s %q is not a valid identifier (letters, digits, '.', '_', '-', at most 128)", what, s)
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
