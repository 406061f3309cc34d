package tools

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// shellQuote returns s as one word for /bin/sh: unchanged when it is made of
// characters no shell treats specially (so commands in the audit log stay
// readable), otherwise in single quotes, with each single quote inside
// written as quote, backslash, quote, quote (close, escaped quote, reopen).
func shellQuote(s string) string {
	if s != "" && shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellSafe matches words that need no quoting. '=' and '~' are safe only
// when not first (an assignment, a tilde expansion), so a word may not
// start with either.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./,:@%+-][A-Za-z0-9_./,:@%+=~-]*$`)

// Validators for identifiers that reach a git command line. Each is an
// allow-list; values are shell-quoted as well, so the allow-lists are about
// git (no option injection, no odd refs), not about the shell.
var (
	// A branch or tag name: git check-ref-format's rules, narrowed.
	branchRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+-]*$`)
	// A revision to check out: a branch name plus ~N and ^N suffixes.
	revisionRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+~^-]*$`)
	// A remote name.
	remoteRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
	// An scp-like ssh URL: git@host:path.
	scpURLRE = regexp.MustCompile(`^git@[A-Za-z0-9][A-Za-z0-9.-]*:[A-Za-z0-9_.~][A-Za-z0-9_.~/+-]*$`)
	// The parts of an http(s) or ssh URL.
	urlHostRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)
	urlPathRE = regexp.MustCompile(`^[A-Za-z0-9_.~/+%@:-]*$`)
	urlUserRE = regexp.MustCompile(`^[A-Za-z0-9_.~+-]+$`)
)

// checkBranch returns what is wrong with a branch name, or "".
func checkBranch(what, s string) string {
	return checkRef(what, s, branchRE)
}

// checkRevision returns what is wrong with a revision to check out, or "".
func checkRevision(s string) string {
	return checkRef("ref", s, revisionRE)
}

func checkRef(what, s string, re *regexp.Regexp) string {
	switch {
	case len(s) > 255:
		return fmt.Sprintf("Error: %s is longer than 255 characters", what)
	case !re.MatchString(s),
		strings.Contains(s, ".."), strings.Contains(s, "//"),
		strings.HasSuffix(s, "/"), strings.HasSuffix(s, "."), strings.HasSuffix(s, ".lock"):
		return fmt.Sprintf("Error: %s %q is not a valid git name (letters, digits and . _ / + -, not starting with - or ending in / . or .lock)", what, s)
	}
	return ""
}

// checkRemote returns what is wrong with a remote name, or "".
func checkRemote(s string) string {
	if len(s) > 255 || !remoteRE.MatchString(s) || strings.HasSuffix(s, ".lock") {
		return fmt.Sprintf("Error: remote %q is not a valid remote name (letters, digits and . _ -)", s)
	}
	return ""
}

// checkGitURL returns what is wrong with a URL to clone, or "". The
// reference's rule: https://, http://, ssh:// or git@ only (no file://,
// no ext:: transports, no local paths); we also refuse passwords in the URL,
// which would land in argv, the audit log and .git/config.
func checkGitURL(s string) string {
	bad := fmt.Sprintf("Error: url %q is not a git URL this tool accepts (https://, http://, ssh:// or git@host:path)", s)
	if len(s) > 2048 {
		return "Error: url is longer than 2048 characters"
	}
	if strings.HasPrefix(s, "git@") {
		if !scpURLRE.MatchString(s) {
			return bad
		}
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh") ||
		u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, " \t\r\n'\"\\`$;|&<>(){}") {
		return bad
	}
	if _, ok := u.User.Password(); ok {
		return "Error: url contains a password; pass the credential in the token parameter instead"
	}
	if u.User != nil && !urlUserRE.MatchString(u.User.Username()) {
		return bad
	}
	if !urlHostRE.MatchString(u.Hostname()) || !urlPathRE.MatchString(u.Path) {
		return bad
	}
	if p := u.Port(); p != "" && (len(p) > 5 || strings.Trim(p, "0123456789") != "") {
		return bad
	}
	return ""
}

// checkPath returns what is wrong with a path or file name for a git
// command, or "": it must be non-empty text without control characters.
func checkPath(what, s string) string {
	if s == "" {
		return fmt.Sprintf("Error: %s must not be empty", what)
	}
	if len(s) > 4096 {
		return fmt.Sprintf("Error: %s is longer than 4096 characters", what)
	}
	if hasControl(s) {
		return fmt.Sprintf("Error: %s must not contain control characters", what)
	}
	return ""
}

// hasControl reports whether s holds an ASCII control character (NUL,
// newline, escape…), which has no business in a name or a header value.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
