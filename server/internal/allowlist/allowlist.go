// Package allowlist is the command allowlist (reference §3.6): an account
// may restrict exec and process start to listed programs, optionally with
// argument patterns (and the Python interpreter to accounts whose list lets
// python3 -c run). No list means everything is allowed. It is a guardrail
// for agents, not a security boundary: the jail is.
//
// A command is allowed when every simple command in it (split at ;, &, &&,
// |, ||, newlines) runs an allowed program with allowed arguments. The
// program is the first word after VAR=value assignments and redirections:
// a name without a slash, found through the sandbox's fixed PATH, matches
// a rule of that name case-insensitively; a word with a slash (./bin/ls,
// /usr/bin/ls) matches only a rule naming exactly that absolute path.
// Assignments to variables that change which program runs or what it
// loads (PATH, LD_*, BASH_ENV, ENV, IFS, …: protectedVar) are refused
// wherever they appear. Always refused: command substitution ($(…) and
// backticks), heredocs and here-strings (<<), process substitution (<(…),
// >(…)), subshells, programs whose name is computed ($X, globs), eval,
// alias, trap, enable, hash -p, let, and privilege changes (sudo, su,
// doas, …). A variable name given to a builtin (printf -v, read, test -v,
// declare, unset, …) must be written out without a subscript, which bash
// evaluates as code (arith.go).
// Wrappers (env, xargs, timeout, nohup, nice, setsid, stdbuf, watch, flock,
// ssh, sh -c, and the exec/command/time builtins) must be allowed
// themselves where they are programs, and what they run is checked too;
// find's -exec, -execdir, -ok and -okdir are refused.
package allowlist

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/boxkite/boxkite/client/api"
)

// maxWrapDepth bounds wrappers inside wrappers (timeout env nice ls …).
const maxWrapDepth = 8

// refusedSubstrings cannot appear anywhere in an allowlisted command, even
// quoted, as in the reference: each runs something the list cannot see.
var refusedSubstrings = []struct{ text, what string }{
	{"$(", "command substitution $( … )"},
	{"`", "command substitution with backticks"},
	{"<<", "heredocs and here-strings (<<)"},
	{"<(", "process substitution <( … )"},
	{">(", "process substitution >( … )"},
}

// alwaysRefused are programs no rule can allow.
var alwaysRefused = map[string]string{
	"eval":    "eval runs a string the allowlist cannot check; run the command directly",
	"sudo":    "changing user is not allowed under an allowlist",
	"doas":    "changing user is not allowed under an allowlist",
	"su":      "changing user is not allowed under an allowlist",
	"runuser": "changing user is not allowed under an allowlist",
	"pkexec":  "changing user is not allowed under an allowlist",
	"alias":   "alias makes a name run something the allowlist cannot see",
	"trap":    "trap runs a string the allowlist cannot check",
	"enable":  "enable can load builtins from a shared library",
}

// protectedVars are variables an assignment may not set under an
// allowlist: each changes which program a name runs, or makes a shell, the
// dynamic loader, an interpreter or a common tool load or run code the
// command line does not name. protectedPrefixes cover families.
var protectedVars = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PS4": true, "PROMPT_COMMAND": true, "CDPATH": true, "GLOBIGNORE": true, "SHELL": true,
	"GCONV_PATH": true, "GLIBC_TUNABLES": true, "HOSTALIASES": true, "LOCPATH": true, "NLSPATH": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "PYTHONUSERBASE": true, "PYTHONSAFEPATH": true,
	"PERL5LIB": true, "PERLLIB": true, "PERL5OPT": true, "RUBYLIB": true, "RUBYOPT": true,
	"NODE_OPTIONS": true, "NODE_PATH": true,
	"EDITOR": true, "VISUAL": true, "PAGER": true, "MANPAGER": true, "BROWSER": true,
	"LESSOPEN": true, "LESSCLOSE": true, "SSH_ASKPASS": true, "SUDO_ASKPASS": true,
	// bash evaluates what is assigned to these as arithmetic (arith.go).
	"RANDOM": true, "SRANDOM": true, "OPTIND": true, "HISTCMD": true,
}

var protectedPrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_"}

// protectedVar reports whether an assignment to name is refused under an
// allowlist (case-insensitively: a shell treats Path and PATH apart, but
// nothing legitimate needs the difference).
func protectedVar(name string) bool {
	n := strings.ToUpper(name)
	if protectedVars[n] {
		return true
	}
	for _, p := range protectedPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// varSetters are builtins that set the variables their arguments name
// (export PATH=…, read PATH, printf -v PATH …); a protected name among
// their arguments is refused like an assignment.
var varSetters = map[string]bool{
	"export": true, "declare": true, "typeset": true, "readonly": true, "local": true,
	"read": true, "printf": true, "mapfile": true, "readarray": true, "getopts": true,
}

// shells run their -c argument as a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}

// commandRule is a compiled api.CommandRule.
type commandRule struct {
	allow, deny []*regexp.Regexp
}

// allowlist is an account's compiled list: program → its rules (any may accept).
type Rules struct {
	rules map[string][]commandRule
	names []string // sorted, for hints
}

// compileAllowlist validates rules as a PUT does and compiles them.
func Compile(rules []api.CommandRule) (*Rules, error) {
	if len(rules) == 0 {
		return nil, RulesError(api.CodeInvalidRules, "the allowlist needs at least one rule",
			`send {"rules": ["ls", {"command": "curl", "args_allow": ["^https://api\\.example\\.com/"]}]}, or DELETE to allow everything`)
	}
	if len(rules) > api.MaxAllowlistRules {
		return nil, RulesError(api.CodeTooManyRules,
			fmt.Sprintf("the allowlist has %d rules; at most %d are allowed", len(rules), api.MaxAllowlistRules), "")
	}
	al := &Rules{rules: map[string][]commandRule{}}
	for i, r := range rules {
		name, err := ruleProgram(r.Command)
		if err != nil {
			return nil, RulesError(api.CodeInvalidRules, fmt.Sprintf("rule %d: %v", i, err),
				`name a program ("ls"), found through the sandbox's PATH, or an absolute path ("/usr/bin/ls"), which then allows that path only`)
		}
		var cr commandRule
		if cr.allow, err = compilePatterns(i, r.ArgsAllow); err != nil {
			return nil, err
		}
		if cr.deny, err = compilePatterns(i, r.ArgsDeny); err != nil {
			return nil, err
		}
		if _, ok := al.rules[name]; !ok {
			al.names = append(al.names, name)
		}
		al.rules[name] = append(al.rules[name], cr)
	}
	slices.Sort(al.names)
	return al, nil
}

// ruleProgram is the key a rule's command is kept under: a program name,
// lowercased, or an absolute path, exactly as written (it must be clean:
// no "..", ".", or doubled or trailing slashes).
func ruleProgram(command string) (string, error) {
	name := strings.TrimSpace(command)
	switch {
	case name == "" || strings.ContainsAny(name, " \t\n\x00"):
		return "", fmt.Errorf("command must be a program name or an absolute path without spaces, got %q", command)
	case !strings.Contains(name, "/"):
		return strings.ToLower(name), nil
	case !path.IsAbs(name) || path.Clean(name) != name || name == "/":
		return "", fmt.Errorf("command %q must be a program name without slashes or a clean absolute path", command)
	}
	return name, nil
}

func compilePatterns(rule int, patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		if len(p) > api.MaxAllowlistPattern {
			return nil, RulesError(api.CodePatternTooLong,
				fmt.Sprintf("rule %d: a pattern is %d characters long; at most %d are allowed", rule, len(p), api.MaxAllowlistPattern), "")
		}
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, RulesError(api.CodeInvalidPattern, fmt.Sprintf("rule %d: pattern %q does not compile: %v", rule, p, err),
				"patterns are RE2 regular expressions (no lookaround or backreferences), matched anywhere in the arguments")
		}
		out = append(out, re)
	}
	return out, nil
}

func RulesError(code, msg, hint string) *api.Error {
	return &api.Error{Status: http.StatusBadRequest, Code: code, Message: msg, Hint: hint}
}

// Check returns nil when command is allowed, else a 403 command_not_allowed.
func (al *Rules) Check(command string) error {
	return al.checkLine(command, 0)
}

func (al *Rules) checkLine(command string, depth int) error {
	if depth > maxWrapDepth {
		return al.refuse("", "wrappers are nested too deeply")
	}
	if strings.IndexByte(command, 0) >= 0 {
		return al.refuse("", "the command contains a NUL byte")
	}
	for _, r := range refusedSubstrings {
		if strings.Contains(command, r.text) {
			return al.refuse("", r.what+" is not allowed under an allowlist")
		}
	}
	if err := posixExpansions(command); err != nil {
		return al.refuse("", err.Error())
	}
	if err := namedFDSubscript(command); err != nil { // arith.go
		return al.refuse("", err.Error())
	}
	// As dash and as bash read it: /bin/sh may be either (parseShell).
	for _, bash := range []bool{false, true} {
		segments, err := parseShell(command, bash)
		if err != nil {
			return al.refuse("", err.Error())
		}
		for _, seg := range segments {
			if err := al.checkWords(seg, depth, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// Shell keywords that may start a simple command without being its program.
var (
	keywordPrefixes = map[string]bool{"!": true, "{": true, "if": true, "then": true, "else": true, "elif": true, "do": true, "while": true, "until": true}
	keywordAlone    = map[string]bool{"}": true, "fi": true, "done": true}
)

// checkWords checks one simple command. wrapped says the words are what a
// wrapper runs (nice ls …): then the first is the program, whatever it
// looks like, as the wrapper will exec it.
func (al *Rules) checkWords(words []shellWord, depth int, wrapped bool) error {
	if depth > maxWrapDepth {
		return al.refuse("", "wrappers are nested too deeply")
	}
	var args []shellWord // the program's arguments, redirections left out
	prog := -1
	// Reserved words count only before any assignment or redirection.
	reserved := !wrapped
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case prog >= 0 && !w.redir:
			args = append(args, w)
		case wrapped && prog < 0:
			prog = i
		case w.redir:
			i++ // its target
			reserved = false
		case w.assign:
			if err := al.checkAssignment(w.text); err != nil {
				return err
			}
			reserved = false
		case reserved && w.reserved() && (keywordPrefixes[w.text] || keywordAlone[w.text]):
		case reserved && w.reserved() && (w.text == "for" || w.text == "select"):
			// "for NAME in WORDS": nothing runs until "do".
			return nil
		case reserved && w.reserved() && (w.text == "case" || w.text == "function"):
			return al.refuse(w.text, w.text+" is not supported under an allowlist")
		default:
			prog = i
		}
	}
	if prog < 0 {
		return nil // only assignments or redirections
	}
	w := words[prog]
	if w.dynamic {
		return al.refuse(w.text, "the program name must be written out, not computed from variables or globs")
	}
	if w.text == "" {
		return al.refuse("", "the program name is empty")
	}
	// name decides how the program behaves (a wrapper, a shell, refused
	// outright), whatever directory it is in; key is what a rule must
	// name: a path with a slash runs that file, never one found by name.
	name := strings.ToLower(path.Base(w.text))
	key, byPath := name, strings.Contains(w.text, "/")
	if byPath {
		key = w.text
	}
	if why, ok := alwaysRefused[name]; ok {
		return al.refuse(name, why)
	}
	texts := make([]string, len(args))
	for i, a := range args {
		texts[i] = a.text
	}
	if byPath || !builtinWrappers[name] {
		if err := al.CheckProgram(key, texts, slices.ContainsFunc(args, func(a shellWord) bool { return a.dynamic })); err != nil {
			return err
		}
	}
	if !byPath && varSetters[name] {
		for _, t := range texts {
			if v, _, _ := strings.Cut(t, "="); protectedVar(v) {
				return al.refuse(name, fmt.Sprintf("%s may not set %s under an allowlist", name, v))
			}
		}
	}
	if !byPath {
		if err := al.checkNames(name, args); err != nil { // arith.go
			return err
		}
	}
	return al.checkWrapped(name, args, texts, depth)
}

// checkAssignment refuses an assignment (NAME=value) to a protected variable.
func (al *Rules) checkAssignment(word string) error {
	v, _, _ := strings.Cut(word, "=")
	v = strings.TrimSuffix(v, "+") // NAME+=value appends
	if protectedVar(v) {
		return al.refuse("", fmt.Sprintf("setting %s is not allowed under an allowlist: it changes which program runs or what it loads", v))
	}
	return nil
}

// CheckProgram checks name and its arguments against the rules. dynamic
// says some argument is computed (variables, globs): the patterns see
// arguments as written, so a rule with patterns cannot vouch for those.
func (al *Rules) CheckProgram(name string, args []string, dynamic bool) error {
	rules, ok := al.rules[name]
	if !ok {
		return al.refuse(name, fmt.Sprintf("%s is not in the account's allowlist", name))
	}
	joined := strings.Join(args, " ")
	for _, r := range rules {
		if r.accepts(joined, dynamic) {
			return nil
		}
	}
	if dynamic {
		return al.refuse(name, fmt.Sprintf("the arguments to %s must be written out, not computed from variables or globs, for the account's allowlist patterns to check them", name))
	}
	return al.refuse(name, fmt.Sprintf("these arguments to %s are not allowed by the account's allowlist", name))
}

func (r commandRule) accepts(args string, dynamic bool) bool {
	if dynamic && len(r.allow)+len(r.deny) > 0 {
		return false
	}
	if len(r.allow) > 0 && !slices.ContainsFunc(r.allow, func(re *regexp.Regexp) bool { return re.MatchString(args) }) {
		return false
	}
	return !slices.ContainsFunc(r.deny, func(re *regexp.Regexp) bool { return re.MatchString(args) })
}

// refuse returns the 403 for program (or the command as a whole when "").
func (al *Rules) refuse(program, why string) *api.Error {
	hint := "the account's command allowlist allows: " + strings.Join(al.names, ", ") +
		"; an admin key can change it with `boxkite allowlist set FILE` or clear it with `boxkite allowlist clear`"
	e := &api.Error{Status: http.StatusForbidden, Code: api.CodeCommandNotAllowed, Message: "command not allowed: " + why, Hint: hint}
	if program != "" {
		e.Details = map[string]string{"program": program}
	}
	return e
}

// Cache keeps compiled allowlists by their JSON, so an exec does not
// recompile an account's patterns.
type Cache struct {
	mu sync.Mutex
	m  map[string]*Rules
}

const maxCachedAllowlists = 1024

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{m: map[string]*Rules{}} }

// Get returns rules compiled, from the cache when it holds them.
func (c *Cache) Get(rules []api.CommandRule) (*Rules, error) {
	key, err := json.Marshal(rules)
	if err != nil {
		return nil, fmt.Errorf("encode allowlist: %w", err)
	}
	c.mu.Lock()
	al, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return al, nil
	}
	al, err = Compile(rules)
	if err != nil {
		// Stored lists were validated when they were set; this one was not.
		return nil, fmt.Errorf("stored allowlist: %w", err)
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedAllowlists {
		clear(c.m)
	}
	c.m[string(key)] = al
	c.mu.Unlock()
	return al, nil
}
