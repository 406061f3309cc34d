package allowlist

import (
	"errors"
	"strings"
)

// This file is the shell reading behind the command allowlist: enough of
// POSIX sh to find every program a command line would start, and to give
// up (refuse) wherever it cannot tell. It is a guardrail, not a sandbox
// boundary: the sandbox's jail is the boundary.

// shellWord is one word of a simple command after quote removal.
type shellWord struct {
	text string
	// dynamic: the word holds an unquoted or double-quoted $ (a parameter
	// expansion or $'…'), or an unquoted glob character, so what runs is
	// not what is written.
	dynamic bool
	// splits: the dynamic part is unquoted, so the word may expand to
	// several words, or none.
	splits bool
	// assign: the word starts with an unquoted NAME=, a variable assignment
	// when it comes before the program.
	assign bool
	// redir: the word is a redirection operator (">", "2>&", "<", …); the
	// word after it is its target, not an argument.
	redir bool
	// quoted: part of the word was quoted or escaped, so it is never a
	// reserved word (if''s runs a program named "if").
	quoted bool
}

// Errors of parseShell; each becomes a refusal with its own message.
var (
	errUnterminatedQuote = errors.New("the command has an unterminated quote")
	errSubshell          = errors.New("subshells and function definitions, ( … ), are not allowed under an allowlist")
)

// parseShell splits cmd into simple commands at unquoted ;, &, &&, |, ||,
// |& and newlines, and each simple command into words. Comments are
// dropped. Quotes and backslashes are removed as the shell would.
//
// Two shells may run a command, and they read some lines differently:
// /bin/sh is dash on Debian and Ubuntu, bash on Fedora and in many images.
// With bash false the line is read as dash reads it: "&>" is "&" (the
// command before it goes to the background) then ">", so in "ls &>x rm"
// rm is a program; $'…' is "$" then an ordinary single-quoted string.
// With bash true it is read as bash reads it: "&>" redirects both
// outputs, and $'…' is ANSI-C quoting, where \' does not end the string,
// so a "; rm" after an escaped quote inside $'…' runs rm, while dash reads
// it as quoted text. A command must pass under both readings
// (allowlist.checkLine).
func parseShell(cmd string, bash bool) ([][]shellWord, error) {
	p := shellParser{s: cmd, bash: bash}
	return p.parse()
}

type shellParser struct {
	s        string
	bash     bool // read as bash does, else as dash (POSIX sh)
	i        int
	segments [][]shellWord
	words    []shellWord

	// The word being read.
	cur     strings.Builder
	inWord  bool
	dynamic bool
	splits  bool
	assign  bool
	quoted  bool // some of cur was quoted or escaped
	plain   bool // everything read into cur so far was unquoted name characters
}

func (p *shellParser) parse() ([][]shellWord, error) {
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == ' ' || c == '\t':
			p.endWord()
			p.i++
		case c == '\n':
			p.endWord()
			p.endSegment()
			p.i++
		case c == '#' && !p.inWord:
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case c == '(' || c == ')':
			return nil, errSubshell
		case c == '&' && p.peek(1) == '>' && p.bash:
			p.endWord()
			op := "&>"
			if p.peek(2) == '>' {
				op = "&>>"
			}
			p.redirect(op, len(op))
		case c == ';' || c == '&' || c == '|':
			p.endWord()
			p.endSegment()
			p.i++
			// &&, ||, |&, ;; are one operator; splitting on either half is the same.
			if n := p.peek(0); n == '&' || n == '|' || n == ';' {
				p.i++
			}
		case c == '<' || c == '>':
			p.readRedirect()
		case c == '\\':
			p.i++
			switch {
			case p.i >= len(p.s):
				p.add('\\', false)
			case p.s[p.i] == '\n': // a line continuation
				p.i++
			default:
				p.add(p.s[p.i], false)
				p.i++
			}
		case c == '\'':
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				return nil, errUnterminatedQuote
			}
			p.addString(p.s[p.i+1 : p.i+1+end])
			p.i += end + 2
		case c == '"':
			if err := p.readDoubleQuoted(); err != nil {
				return nil, err
			}
		case c == '$' && p.peek(1) == '\'' && p.bash:
			if err := p.readANSIQuoted(); err != nil {
				return nil, err
			}
		default:
			if c == '$' || c == '*' || c == '?' || c == '[' || c == '`' {
				p.dynamic, p.splits = true, true
			}
			if c == '=' && p.plain && p.cur.Len() > 0 && isNameStart(p.cur.String()[0]) {
				p.assign = true
			}
			isName := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
			wasPlain := p.plain || !p.inWord
			p.add(c, true)
			p.plain = wasPlain && isName
			p.i++
		}
	}
	p.endWord()
	p.endSegment()
	return p.segments, nil
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (p *shellParser) peek(off int) byte {
	if p.i+off < len(p.s) {
		return p.s[p.i+off]
	}
	return 0
}

// add appends one byte to the current word. Quoted bytes end any chance
// of the word being an assignment's name.
func (p *shellParser) add(c byte, unquoted bool) {
	if !p.inWord {
		p.inWord, p.plain = true, unquoted
	}
	if !unquoted {
		p.plain, p.quoted = false, true
	}
	p.cur.WriteByte(c)
}

func (p *shellParser) addString(s string) {
	if !p.inWord {
		p.inWord = true
	}
	p.plain, p.quoted = false, true
	p.cur.WriteString(s)
}

// readDoubleQuoted reads "…": backslash escapes only $ ` " \ and newline,
// and $ still expands.
func (p *shellParser) readDoubleQuoted() error {
	p.i++ // the opening quote
	if !p.inWord {
		p.inWord = true
	}
	p.plain, p.quoted = false, true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return nil
		case c == '\\' && p.i+1 < len(p.s) && strings.IndexByte("$`\"\\\n", p.s[p.i+1]) >= 0:
			if p.s[p.i+1] != '\n' {
				p.cur.WriteByte(p.s[p.i+1])
			}
			p.i += 2
		default:
			if c == '$' || c == '`' {
				p.dynamic = true
			}
			p.cur.WriteByte(c)
			p.i++
		}
	}
	return errUnterminatedQuote
}

// posixExpansions refuses, anywhere in cmd (quoted or not, as
// refusedSubstrings), the parameter expansions that bash evaluates as
// code: where /bin/sh is bash, a subscript (${A[X]}), a substring offset
// (${V:X}), indirection (${!X}), a transformation (${X@P}) and $[X]
// evaluate the value of X as arithmetic or as a prompt, and a value built
// without writing "$(" (a='$'; b='('; X="z[$a$b./run)]") then runs a
// program the allowlist never saw. Only POSIX's forms are allowed:
// ${NAME}, ${#NAME} and ${NAME OP WORD} with OP one of :- - := = :? ? :+ +
// % %% # ##; a nested ${…} in WORD is checked in turn.
func posixExpansions(cmd string) error {
	if strings.Contains(cmd, "$[") {
		return errors.New("bash's $[ … ] arithmetic is not allowed under an allowlist")
	}
	for rest := cmd; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return nil
		}
		rest = rest[i+2:]
		if !posixParam(rest) {
			return errors.New("only POSIX parameter expansions (${NAME}, ${NAME:-WORD}, ${#NAME}, ${NAME%PATTERN}, …) are allowed under an allowlist: bash evaluates subscripts, substrings, ${!NAME} and ${NAME@…} as code")
		}
	}
}

// posixParam reports whether s, what follows a "${", starts a POSIX
// parameter expansion.
func posixParam(s string) bool {
	if strings.HasPrefix(s, "#}") {
		return true // the number of positional parameters
	}
	s = strings.TrimPrefix(s, "#") // a length
	n := 0
	switch {
	case s != "" && isNameStart(s[0]):
		for n < len(s) && (isNameStart(s[n]) || s[n] >= '0' && s[n] <= '9') {
			n++
		}
	case s != "" && s[0] >= '0' && s[0] <= '9':
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
	case s != "" && strings.IndexByte("@*#?-$!", s[0]) >= 0:
		n = 1
	default:
		return false
	}
	s = s[n:]
	for _, op := range []string{"}", ":-", ":=", ":?", ":+", "-", "=", "?", "+", "%", "#"} {
		if strings.HasPrefix(s, op) {
			return true
		}
	}
	return false
}

// readANSIQuoted reads bash's $'…': a backslash escapes the byte after
// it, a quote among them. What the escapes mean does not matter here: the
// word is marked computed, as any $ makes it.
func (p *shellParser) readANSIQuoted() error {
	if !p.inWord {
		p.inWord = true
	}
	p.plain, p.quoted, p.dynamic = false, true, true
	for p.i += 2; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; c {
		case '\\':
			p.i++
			if p.i < len(p.s) {
				p.cur.WriteByte(p.s[p.i])
			}
		case '\'':
			p.i++
			return nil
		default:
			p.cur.WriteByte(c)
		}
	}
	return errUnterminatedQuote
}

// readRedirect reads <, >, >>, <>, >|, >&, <& (a word of digits just
// before it is its file descriptor, not an argument).
func (p *shellParser) readRedirect() {
	fd := ""
	if p.inWord && p.plain && !p.dynamic && isDigits(p.cur.String()) {
		fd = p.cur.String()
		p.resetWord()
	} else {
		p.endWord()
	}
	op := string(p.s[p.i])
	if n := p.peek(1); n == '>' || n == '&' || n == '|' || (op == "<" && n == '<') {
		op += string(n)
	}
	p.redirect(fd+op, len(op))
}

// redirect adds the redirection word op, which takes n bytes of input.
func (p *shellParser) redirect(op string, n int) {
	p.words = append(p.words, shellWord{text: op, redir: true})
	p.i += n
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func (p *shellParser) endWord() {
	if p.inWord {
		p.words = append(p.words, shellWord{text: p.cur.String(), dynamic: p.dynamic, splits: p.splits, assign: p.assign, quoted: p.quoted})
	}
	p.resetWord()
}

func (p *shellParser) resetWord() {
	p.cur.Reset()
	p.inWord, p.dynamic, p.splits, p.assign, p.quoted, p.plain = false, false, false, false, false, false
}

func (p *shellParser) endSegment() {
	if len(p.words) > 0 {
		p.segments = append(p.segments, p.words)
	}
	p.words = nil
}

// getopt describes a program's options the way getopt(3) with a leading
// "+" reads them: options stop at the first operand or "--"; short
// options may be clustered; those in short take a value, attached or as
// the next word; long options take one after "=" or, if listed in long,
// as the next word.
type getopt struct {
	short string
	long  []string
}

// parse returns the index of the first operand of args and calls fn (when
// not nil) for every option with its name ("c", or "--command") and value.
// ok is false when an option's value is missing.
func (g getopt) parse(args []string, fn func(name, val string)) (first int, ok bool) {
	i := 0
	// next takes the option's value from the argument after it.
	next := func() (string, bool) {
		if i+1 >= len(args) {
			return "", false
		}
		i++
		return args[i], true
	}
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			return i + 1, true
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a, "=")
			if !hasVal && g.takesLong(name[2:]) {
				if val, ok = next(); !ok {
					return i, false
				}
			}
			if fn != nil {
				fn(name, val)
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				name := a[j : j+1]
				if !strings.Contains(g.short, name) {
					if fn != nil {
						fn(name, "")
					}
					continue
				}
				val := a[j+1:]
				if val == "" {
					if val, ok = next(); !ok {
						return i, false
					}
				}
				if fn != nil {
					fn(name, val)
				}
				break
			}
		default:
			return i, true
		}
		i++
	}
	return i, true
}

func (g getopt) takesLong(name string) bool {
	for _, l := range g.long {
		if l == name {
			return true
		}
	}
	return false
}

// reserved reports whether the word can be a reserved word (if, {, do, …):
// written out with nothing quoted, escaped or expanded.
func (w shellWord) reserved() bool { return !w.dynamic && !w.quoted }
