package sidecar

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// An exec runs `/bin/sh -c COMMAND`. Where /bin/sh is dash and COMMAND is
// one external program with plain words, the shell adds nothing but its own
// start (a dynamically linked exec) and a fork: dash forks even for the last
// command of -c. Such a command is run directly, as dash would have run it:
// the same file, found by dash's PATH search; the same argv; the
// environment dash exports (the command's, plus PWD); the same process
// group, credentials, cwd, stdin and output pipes. What dash does after the
// program ends is done by run: the note on stderr of a death by signal.
// Anything dash would decide differently (not found, not executable, a
// script without #!) is left to dash: a direct start that fails falls back
// to /bin/sh -c, which fails or runs in its own way, and no process of the
// command has run in between.

// plainWords returns command's words when /bin/sh would split it into
// exactly these, expanding nothing, and run the first as a program found
// on PATH or named by a path: nil for anything else. Strict: plain words
// are letters, digits and _-./,:=+@% separated by spaces or tabs, so no
// quote, expansion, glob, redirection, operator, comment, tilde or newline;
// the first word is no assignment, keyword or builtin. `true` and `false`
// may stand alone (coreutils' own answer --help; the builtins ignore it).
func plainWords(command string) []string {
	var words []string
	start := -1
	for i := 0; i < len(command); i++ {
		switch c := command[i]; {
		case c == ' ' || c == '\t':
			if start >= 0 {
				words = append(words, command[start:i])
				start = -1
			}
		case plainByte(c):
			if start < 0 {
				start = i
			}
		default:
			return nil
		}
	}
	if start >= 0 {
		words = append(words, command[start:])
	}
	switch {
	case len(words) == 0, strings.IndexByte(words[0], '=') >= 0:
		return nil // empty, or an assignment (a=b cmd), or a name with = (not worth telling apart)
	case words[0] == "true" || words[0] == "false":
		if len(words) > 1 {
			return nil
		}
	case shellBuiltin(words[0]):
		return nil
	}
	return words
}

func plainByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_-./,:=+@%", c) >= 0
}

// shellBuiltin reports whether sh runs name itself rather than a program
// on PATH: dash 0.5's builtins (builtins.def) and reserved words, with
// bash's and POSIX's added so that no shell's own command is taken for a
// program. Names holding bytes plainByte refuses ([, !, {) cannot reach it.
func shellBuiltin(name string) bool {
	switch name {
	case
		// dash's builtins
		".", ":", "alias", "bg", "break", "cd", "chdir", "command", "continue",
		"echo", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts",
		"hash", "jobs", "kill", "local", "printf", "pwd", "read", "readonly",
		"return", "set", "shift", "test", "times", "trap", "true", "type",
		"ulimit", "umask", "unalias", "unset", "wait",
		// reserved words
		"case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in",
		"then", "until", "while", "function", "select", "time", "coproc",
		// bash's and others' builtins
		"builtin", "caller", "compgen", "complete", "compopt", "declare", "dirs",
		"disown", "enable", "help", "history", "let", "logout", "mapfile",
		"newgrp", "popd", "pushd", "readarray", "shopt", "source", "suspend",
		"typeset":
		return true
	}
	return false
}

// shellVars are the variables dash sets or checks at its start, so that
// the environment its command sees is not the one it was given: PWD (kept
// only when it names the cwd), PPID, OPTIND (reset to 1) and IFS.
func shellVar(name string) bool {
	switch name {
	case "PWD", "PPID", "OPTIND", "IFS":
		return true
	}
	return false
}

// directCmd is how to run a command without the shell.
type directCmd struct {
	path string   // the file dash would execve
	argv []string // the words; argv[0] as typed
	env  []string // what dash would export
}

// direct returns how to run spec without /bin/sh, or false when the shell
// is not dash, the command is not plain, the environment holds a variable
// dash changes, or PATH holds an entry dash reads its own way.
func (h *Handler) direct(spec execSpec) (directCmd, bool) {
	words := plainWords(spec.command)
	if words == nil || !h.shIsDash() {
		return directCmd{}, false
	}
	path := ""
	for _, kv := range spec.env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !shellName(name) || shellVar(name) {
			return directCmd{}, false // dash drops or rewrites it
		}
		if name == "PATH" {
			path = value
		}
	}
	file := words[0]
	if strings.IndexByte(file, '/') < 0 {
		var ok bool
		if file, ok = searchPath(file, path); !ok {
			return directCmd{}, false // dash says "not found" in its words
		}
	}
	pwd, ok := physicalDir(spec.dir)
	if !ok {
		return directCmd{}, false
	}
	env := append(spec.env[:len(spec.env):len(spec.env)], "PWD="+pwd)
	return directCmd{path: file, argv: words, env: env}, true
}

// shellName reports whether name is a shell variable name; dash leaves
// other names out of its command's environment.
func shellName(name string) bool {
	if name == "" || ('0' <= name[0] && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// searchPath is dash's PATH search (find_command): the first entry where
// dir/name is a regular file, whatever its mode; execve then decides.
// false when there is none, or PATH holds an entry dash reads otherwise
// (empty or relative: the cwd; with %: a builtin or function directory).
func searchPath(name, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	for dir := range strings.SplitSeq(path, ":") {
		if !filepath.IsAbs(dir) || strings.IndexByte(dir, '%') >= 0 {
			return "", false
		}
		file := dir + "/" + name // as dash joins them, even after a trailing /
		var st syscall.Stat_t
		if err := syscall.Stat(file, &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			return file, true
		}
	}
	return "", false
}

// shIsDashAt reports whether the shell at path is dash, by the name of
// the file its links end at (/bin/sh -> dash on Debian and Ubuntu).
func shIsDashAt(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(real) == "dash"
}

// signalNames are glibc's strsignal texts, which dash prints.
var signalNames = [...]string{
	1: "Hangup", "Interrupt", "Quit", "Illegal instruction", "Trace/breakpoint trap",
	"Aborted", "Bus error", "Floating point exception", "Killed", "User defined signal 1",
	"Segmentation fault", "User defined signal 2", "Broken pipe", "Alarm clock", "Terminated",
	"Stack fault", "Child exited", "Continued", "Stopped (signal)", "Stopped",
	"Stopped (tty input)", "Stopped (tty output)", "Urgent I/O condition", "CPU time limit exceeded",
	"File size limit exceeded", "Virtual timer expired", "Profiling timer expired", "Window changed",
	"I/O possible", "Power failure", "Bad system call",
}

// sigRTMin is glibc's SIGRTMIN: it keeps 32 and 33 for its threads.
const sigRTMin = 34

// strsignal is glibc's strsignal(sig).
func strsignal(sig syscall.Signal) string {
	n := int(sig)
	switch {
	case 0 < n && n < len(signalNames):
		return signalNames[n]
	case sigRTMin <= n && n <= 64:
		return "Real-time signal " + strconv.Itoa(n-sigRTMin)
	}
	return "Unknown signal " + strconv.Itoa(n)
}
