package tools

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

var quoteTests = []struct{ in, want string }{
	{"", "''"},
	{"main", "main"},
	{"/workspace/repo", "/workspace/repo"},
	{"feature/x-1.2+rc", "feature/x-1.2+rc"},
	{"user.email=ada@example.com", "user.email=ada@example.com"},
	{"HEAD~1", "HEAD~1"},
	{"~root", "'~root'"},
	{"=x", "'=x'"},
	{"a b", "'a b'"},
	{"it's", `'it'\''s'`},
	{"'", `''\'''`},
	{"$(rm -rf /)", "'$(rm -rf /)'"},
	{"`id`", "'`id`'"},
	{"a;b|c&d", "'a;b|c&d'"},
	{"*.go", "'*.go'"},
	{"HEAD^", "'HEAD^'"},
	{"line\nbreak", "'line\nbreak'"},
	{`back\slash`, `'back\slash'`},
	{`"dq"`, `'"dq"'`},
	{"-n", "-n"},
	{"ünïcode", "'ünïcode'"},
}

func TestShellQuote(t *testing.T) {
	for _, tt := range quoteTests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestShellQuoteSh runs each quoted word through a real /bin/sh.
func TestShellQuoteSh(t *testing.T) {
	inputs := []string{"it's ' '' '''", "$HOME ${x:-y} $(id) `id`", "a\nb\tc\rd", "!event #comment", "~ ~root *", "\\ \\\\ \\'", "é 日本 🎉"}
	for _, tt := range quoteTests {
		inputs = append(inputs, tt.in)
	}
	for _, in := range inputs {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(in)).Output()
		if err != nil {
			t.Fatalf("sh -c 'printf %%s %s': %v", shellQuote(in), err)
		}
		if string(out) != in {
			t.Errorf("sh printed %q for shellQuote(%q) = %s", out, in, shellQuote(in))
		}
	}
}

// FuzzShellQuote checks the quoting with a tiny parser of the sh words
// shellQuote may produce: unquoted runs of safe characters, single-quoted
// runs, and \' between them. Anything else the parser refuses.
func FuzzShellQuote(f *testing.F) {
	for _, tt := range quoteTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return // argv cannot carry NUL; nothing we quote holds one
		}
		q := shellQuote(s)
		got, err := parseShWord(q)
		if err != nil {
			t.Fatalf("shellQuote(%q) = %s: %v", s, q, err)
		}
		if got != s {
			t.Fatalf("shellQuote(%q) = %s, which sh reads as %q", s, q, got)
		}
	})
}

// parseShWord reads q as exactly one sh word of the forms shellQuote makes.
func parseShWord(q string) (string, error) {
	if q == "" {
		return "", errors.New("empty word")
	}
	if q[0] == '~' || q[0] == '=' {
		return "", errors.New("unquoted ~ or = first")
	}
	var b strings.Builder
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\'':
			end := strings.IndexByte(q[i+1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated single quote")
			}
			b.WriteString(q[i+1 : i+1+end])
			i += end + 2
		case c == '\\':
			if i+1 >= len(q) || q[i+1] != '\'' {
				return "", errors.New("backslash outside quotes escapes something else than '")
			}
			b.WriteByte('\'')
			i += 2
		case strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./,:@%+=~-", c) >= 0:
			b.WriteByte(c)
			i++
		default:
			return "", errors.New("unquoted special character " + string(rune(c)))
		}
	}
	return b.String(), nil
}

func TestCheckGitURL(t *testing.T) {
	good := []string{
		"https://github.com/o/r.git",
		"https://github.com/o/r",
		"http://gitea.local:3000/o/r.git",
		"https://x-access-token@github.com/o/r.git",
		"ssh://git@github.com/o/r.git",
		"ssh://git@host.example:2222/~user/r.git",
		"git@github.com:o/r.git",
		"git@gitlab.com:group/sub/r.git",
	}
	bad := []string{
		"",
		"file:///etc/passwd",
		"/workspace/other",
		"../repo",
		"ext::sh -c touch% /tmp/pwned",
		"fd::3",
		"--upload-pack=touch /tmp/x",
		"-u x",
		"ftp://host/r",
		"https://user:pass@github.com/o/r",
		"https://-oProxyCommand=x/r",
		"ssh://-oProxyCommand=touch%20x/r",
		"git@-oProxyCommand=x:r",
		"git@host:-x",
		"https://github.com/o/r?x=1",
		"https://github.com/o/r#frag",
		"https://github.com/o/r; rm -rf /",
		"https://github.com/o/$(id)",
		"https://github.com/o/r\n",
		"https://github.com:99999999/o/r",
		"https:github.com/o/r",
	}
	for _, u := range good {
		if msg := checkGitURL(u); msg != "" {
			t.Errorf("checkGitURL(%q) = %q, want ok", u, msg)
		}
	}
	for _, u := range bad {
		if checkGitURL(u) == "" {
			t.Errorf("checkGitURL(%q) = ok, want a refusal", u)
		}
	}
}

func TestCheckRefs(t *testing.T) {
	tests := []struct {
		name  string
		check func(string) string
		good  []string
		bad   []string
	}{
		{
			"branch", func(s string) string { return checkBranch("branch", s) },
			[]string{"main", "feature/x", "v1.2.3", "fix_12+b", "release-2026.08"},
			[]string{"", "-x", "--force", "a..b", "a//b", "a/", "a.", "x.lock", "a b", "a~1", "a^", "a:b", "@{u}", "a\nb", "ü", strings.Repeat("a", 256)},
		},
		{
			"revision", checkRevision,
			[]string{"main", "HEAD", "HEAD~2", "HEAD^", "v1.0^", "1a2b3c4d", "origin/main"},
			[]string{"", "-b", "--orphan", "a..b", "HEAD@{1}", "a b", "$(id)"},
		},
		{
			"remote", checkRemote,
			[]string{"origin", "up-stream", "fork_2", "a.b"},
			[]string{"", "-x", "a/b", "https://github.com/o/r", "a b", "x.lock"},
		},
	}
	for _, tt := range tests {
		for _, s := range tt.good {
			if msg := tt.check(s); msg != "" {
				t.Errorf("%s %q: %q, want ok", tt.name, s, msg)
			}
		}
		for _, s := range tt.bad {
			if tt.check(s) == "" {
				t.Errorf("%s %q: ok, want a refusal", tt.name, s)
			}
		}
	}
}

// FuzzGitArgs: whatever passes a validator cannot be read by git as an
// option, holds no whitespace or control character, and survives quoting.
func FuzzGitArgs(f *testing.F) {
	for _, s := range []string{"https://github.com/o/r.git", "git@h:o/r", "ssh://git@h:22/r", "main", "HEAD~1", "origin", "-x", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checks := map[string]string{
			"url":      checkGitURL(s),
			"branch":   checkBranch("branch", s),
			"revision": checkRevision(s),
			"remote":   checkRemote(s),
		}
		for name, msg := range checks {
			if msg != "" {
				continue
			}
			if strings.HasPrefix(s, "-") || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				t.Errorf("%s %q passed the check", name, s)
			}
			if got, err := parseShWord(shellQuote(s)); err != nil || got != s {
				t.Errorf("%s %q: quoted %s reads back as %q (%v)", name, s, shellQuote(s), got, err)
			}
		}
	})
}
