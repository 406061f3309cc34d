package allowlist

import (
	"fmt"
	"slices"
	"strings"
)

// Wrappers: programs that run another program (their operand), checked
// as that program would be; see the package comment.

// builtinWrappers are shell builtins that run their operand; only the
// operand is checked.
var builtinWrappers = map[string]bool{"exec": true, "command": true, "builtin": true, "time": true}

// Options of the wrappers, as their getopt strings declare them.
var wrapperOpts = map[string]getopt{
	"exec":    {short: "a"},
	"command": {},
	"builtin": {},
	"time":    {short: "fo", long: []string{"format", "output"}},
	"nohup":   {},
	"nice":    {short: "n", long: []string{"adjustment"}},
	"setsid":  {},
	"stdbuf":  {short: "ioe", long: []string{"input", "output", "error"}},
	"timeout": {short: "ks", long: []string{"kill-after", "signal"}},
	"xargs":   {short: "adEILnPs", long: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}},
	"env":     {short: "uCS", long: []string{"unset", "chdir", "split-string"}},
	"watch":   {short: "nq", long: []string{"interval", "equexit"}},
	"flock":   {short: "wEc", long: []string{"timeout", "conflict-exit-code", "command"}},
	"ssh":     {short: "BbcDEeFIiJLlmOoPpQRSWw"},
}

// checkWrapped checks what a wrapper program runs, if name is one.
func (al *Rules) checkWrapped(name string, args []shellWord, texts []string, depth int) error {
	if name == "find" {
		return al.checkFind(args)
	}
	if name == "hash" {
		if slices.ContainsFunc(texts, func(t string) bool { return strings.HasPrefix(t, "-") && strings.Contains(t, "p") }) {
			return al.refuse(name, "hash -p makes a name run any file; it is not allowed under an allowlist")
		}
		return nil
	}
	if shells[name] {
		return al.checkShell(name, args, texts, depth)
	}
	g, ok := wrapperOpts[name]
	if !ok {
		return nil
	}
	var script string
	hasScript, splitString, execDirect := false, false, false
	var sshOpts []string
	first, ok := g.parse(texts, func(opt, val string) {
		switch {
		case name == "flock" && (opt == "c" || opt == "--command"):
			script, hasScript = val, true
		case name == "env" && (opt == "S" || opt == "--split-string"):
			splitString = true
		case name == "watch" && (opt == "x" || opt == "--exec"):
			execDirect = true
		case name == "ssh" && opt == "o":
			sshOpts = append(sshOpts, val)
		}
	})
	if !ok {
		return al.refuse(name, fmt.Sprintf("cannot tell what %s would run: an option lacks its value", name))
	}
	if splitString {
		return al.refuse(name, "env -S is not supported under an allowlist; write the command out")
	}
	// Everything a wrapper reads before the program it runs must be
	// written out: an unquoted $X or glob there can expand to more words
	// (nice -n$X, timeout $T, env A=$X), one of them a program nobody checked.
	if err := al.written(name, args[:first]); err != nil {
		return err
	}
	rest := args[first:]
	switch name {
	case "env":
		for len(rest) > 0 && (rest[0].assign || strings.Contains(rest[0].text, "=")) {
			if err := al.checkAssignment(rest[0].text); err != nil {
				return err
			}
			if err := al.written(name, rest[:1]); err != nil {
				return err
			}
			rest = rest[1:]
		}
	case "timeout":
		if len(rest) > 0 {
			if err := al.written(name, rest[:1]); err != nil { // the duration
				return err
			}
			rest = rest[1:]
		}
	case "xargs":
		if len(rest) == 0 {
			return al.CheckProgram("echo", nil, false) // xargs runs echo by default
		}
	case "flock":
		if hasScript {
			return al.checkLine(script, depth+1)
		}
		if len(rest) > 0 {
			if err := al.written(name, rest[:1]); err != nil { // the lock file or descriptor
				return err
			}
			rest = rest[1:]
		}
		// flock FILE -c SCRIPT: flock looks for -c after the file itself.
		if len(rest) > 0 && (rest[0].text == "-c" || rest[0].text == "--command") {
			if len(rest) < 2 || rest[1].dynamic {
				return al.refuse(name, "the script of flock -c must be written out")
			}
			return al.checkLine(rest[1].text, depth+1)
		}
	case "watch":
		if !execDirect {
			// watch hands its words, expanded, to sh -c: all of them
			// must be written out for the line checked to be the line run.
			if err := al.written(name, rest); err != nil {
				return err
			}
			return al.checkLine(joinWords(rest), depth+1)
		}
	case "ssh":
		if err := al.written(name, rest); err != nil {
			return err
		}
		return al.checkSSH(rest, sshOpts, g, depth)
	}
	if len(rest) == 0 {
		return nil
	}
	return al.checkWords(rest, depth+1, true)
}

// written refuses words that are computed (variables, globs), which
// program reads before what it runs.
func (al *Rules) written(program string, words []shellWord) error {
	for _, w := range words {
		if w.dynamic {
			return al.refuse(program, fmt.Sprintf("%q: what %s reads before the program it runs must be written out, not computed from variables or globs", w.text, program))
		}
	}
	return nil
}

// findValueTests are find's tests and options that take the next word as
// their value.
var findValueTests = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true,
	"-regex": true, "-iregex": true, "-lname": true, "-ilname": true, "-newer": true, "-samefile": true,
	"-type": true, "-xtype": true, "-user": true, "-group": true, "-size": true, "-perm": true,
	"-mtime": true, "-mmin": true, "-atime": true, "-amin": true, "-ctime": true, "-cmin": true,
	"-maxdepth": true, "-mindepth": true, "-printf": true, "-fprint": true, "-fprintf": true, "-fls": true,
}

// checkFind refuses find's actions that run programs (-exec, -execdir,
// -ok, -okdir), and arguments that could become one when expanded: an
// unquoted variable or glob anywhere, or a quoted variable anywhere but
// as the value of a test (-name "$P").
func (al *Rules) checkFind(args []shellWord) error {
	for i, a := range args {
		switch strings.ToLower(a.text) {
		case "-exec", "-execdir", "-ok", "-okdir":
			return al.refuse("find", "find "+a.text+" runs other programs; it is not allowed under an allowlist")
		}
		valueOf := i > 0 && !args[i-1].dynamic && findValueTests[strings.ToLower(args[i-1].text)]
		if a.splits || a.dynamic && !valueOf {
			return al.refuse("find", fmt.Sprintf("%q: find's arguments must be written out, since a computed one may be an action such as -exec; "+
				"quote a variable that is the value of a test (-name \"$P\")", a.text))
		}
	}
	return nil
}

// checkShell checks sh -c 'script': the script, like any command line. A
// shell reading a script file or stdin is only the shell itself. Options
// and the script must be written out (bash -$X could be bash -c ./x), and
// login or interactive shells (-l, -i, --login, --rcfile) are refused:
// they run startup files in $HOME, which is the sandbox's workspace. zsh
// reads $HOME/.zshenv even for -c, so it must be told not to (-f).
func (al *Rules) checkShell(name string, args []shellWord, texts []string, depth int) error {
	cflag, noRCs := false, false
	i := 0
	for ; i < len(texts); i++ {
		if err := al.written(name, args[i:i+1]); err != nil {
			return err
		}
		t := texts[i]
		if t == "--" {
			i++
			break
		}
		if len(t) < 2 || t[0] != '-' && t[0] != '+' {
			break
		}
		short := t[0] == '-' && t[1] != '-'
		switch {
		case t == "--login" || t == "--rcfile" || t == "--init-file" || short && strings.ContainsAny(t[1:], "il"):
			return al.refuse(name, name+" "+t+" starts a login or interactive shell, which runs startup files the sandbox can write; it is not allowed under an allowlist")
		case t[1:] == "o" || t[1:] == "O":
			i++ // takes a value
			if i < len(args) {
				if err := al.written(name, args[i:i+1]); err != nil {
					return err
				}
			}
		case t == "--no-rcs" || short && strings.ContainsRune(t[1:], 'f'):
			noRCs = true
			cflag = cflag || short && strings.ContainsRune(t[1:], 'c')
		case strings.HasPrefix(t, "--"):
		case strings.ContainsRune(t[1:], 'c'):
			cflag = true
		}
	}
	if i < len(args) {
		if err := al.written(name, args[i:i+1]); err != nil {
			return err
		}
	}
	if !cflag {
		return nil
	}
	if i >= len(texts) {
		return al.refuse(name, name+" -c needs a script")
	}
	if name == "zsh" && !noRCs {
		return al.refuse(name, "zsh -c runs $HOME/.zshenv, which the sandbox can write; use zsh -f -c")
	}
	return al.checkLine(texts[i], depth+1)
}

// sshCommandOptions run local commands; -o with them is refused.
var sshCommandOptions = []string{"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "remotecommand", "match"}

// checkSSH checks ssh [options] host [command]: the remote command like a
// command line; without one (an interactive login) it is refused. OpenSSH
// also reads options after the host, so those are parsed too.
func (al *Rules) checkSSH(rest []shellWord, opts []string, g getopt, depth int) error {
	if len(rest) == 0 {
		return al.refuse("ssh", "ssh without a host is not allowed")
	}
	texts := make([]string, len(rest)-1)
	for i, w := range rest[1:] {
		texts[i] = w.text
	}
	first, ok := g.parse(texts, func(opt, val string) {
		if opt == "o" {
			opts = append(opts, val)
		}
	})
	if !ok {
		return al.refuse("ssh", "cannot tell what ssh would run: an option lacks its value")
	}
	for _, o := range opts {
		key, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(o)), "=")
		key, _, _ = strings.Cut(key, " ")
		if slices.Contains(sshCommandOptions, key) {
			return al.refuse("ssh", "ssh -o "+key+" runs a local command; it is not allowed under an allowlist")
		}
	}
	command := rest[1+first:]
	if len(command) == 0 {
		return al.refuse("ssh", "interactive ssh sessions are not allowed under an allowlist; give the remote command")
	}
	return al.checkLine(joinWords(command), depth+1)
}

// joinWords rebuilds the command line a wrapper hands to a shell (ssh and
// watch join their arguments with spaces).
func joinWords(words []shellWord) string {
	texts := make([]string, len(words))
	for i, w := range words {
		texts[i] = w.text
	}
	return strings.Join(texts, " ")
}
