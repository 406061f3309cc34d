package tools

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// redaction replaces what re matches with repl (regexp.Expand syntax), or,
// when keep is set, only the matches keep accepts.
type redaction struct {
	re   *regexp.Regexp
	repl string
	keep func(match string) bool
	// need lists lower-case strings of which the text must hold one for
	// re to match: most text holds none, and a substring search is far
	// cheaper than running the pattern.
	need []string
	// find, when set, finds the matches instead of re (the PAT pattern,
	// which as a regular expression costs more than all the others).
	find func(s string) [][]int
	// toEnd: the match runs to the end of the text (a private key block
	// cut off before its END line). A StreamRedactor holds such blocks by
	// their BEGIN line instead.
	toEnd bool
}

// redactions are the secret-shaped patterns of reference §4.4, in the order
// they run, with these deliberate changes:
//   - the Azure connection string runs before the bare AccountKey pattern
//     (in the reference the latter ran first, so the former never matched);
//   - password/passwd/pwd need a ':' or '=' and stay on one line, so
//     "password protected" and the output of `pwd` are left alone, and a
//     pwd value may not start with '/', so PWD=/workspace/x is left alone;
//   - the generic PAT pattern needs the token half to mix character classes,
//     as random tokens do, so long snake_case identifiers are left alone;
//   - added: boxkite API keys, bearer and Basic authorization values,
//     fine-grained GitHub tokens, OpenAI/Anthropic, Stripe, Slack and Google
//     keys, PKCS#8 and PGP private key blocks, a private key block cut
//     off before its END line, and the password in a URL
//     (scheme://user:password@host).
//
// It is a courtesy, not a boundary (SECURITY.md): it catches secrets an
// agent prints by accident, not ones a program sets out to hide.
//
// They are compiled on first use: compiling them is most of what the CLI's
// start-up would otherwise spend in this package (about 3 ms, 3,000
// allocations), and most commands never redact.
var redactions = sync.OnceValue(func() []redaction {
	begin := []string{"-----begin "}
	return []redaction{
		{re: regexp.MustCompile(`(?is)-----BEGIN (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED) )?PRIVATE KEY-----.*?-----END (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED) )?PRIVATE KEY-----`), repl: "[REDACTED_SSH_PRIVATE_KEY]", need: begin},
		{re: regexp.MustCompile(`(?is)-----BEGIN PGP PRIVATE KEY BLOCK-----.*?-----END PGP PRIVATE KEY BLOCK-----`), repl: "[REDACTED_PGP_PRIVATE_KEY]", need: begin},
		{re: regexp.MustCompile(`(?is)-----BEGIN (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----.*`), repl: "[REDACTED_SSH_PRIVATE_KEY]", need: begin, toEnd: true}, // cut off before its END
		{re: regexp.MustCompile(`(?i)bxk_live_[A-Za-z0-9_-]{20,}`), repl: "[REDACTED_BOXKITE_KEY]", need: []string{"bxk_live_"}},
		{re: regexp.MustCompile(`(?i)(api[_-]?key|apikey|api_secret|secret_key|access_token|auth_token)["\s:=]+["']?[\w-]{20,}`), repl: "[REDACTED_KEY]", need: []string{"api", "secret_key", "access_token", "auth_token"}},
		{re: regexp.MustCompile(`(?i)AKIA[0-9A-Z]{16}`), repl: "[REDACTED_AWS_KEY]", need: []string{"akia"}},
		{re: regexp.MustCompile(`(?i)aws_secret_access_key["\s:=]+["']?[\w/+=]{40}`), repl: "[REDACTED_AWS_SECRET]", need: []string{"aws_secret_access_key"}},
		{re: regexp.MustCompile(`(?i)DefaultEndpointsProtocol=https;AccountName=\w+;AccountKey=[\w/+=]+`), repl: "[REDACTED_AZURE_CONN_STRING]", need: []string{"defaultendpointsprotocol="}},
		{re: regexp.MustCompile(`(?i)AccountKey=[\w/+=]+`), repl: "AccountKey=[REDACTED]", need: []string{"accountkey="}},
		{re: regexp.MustCompile(`(?i)(password|passwd)["' \t]*[:=][ \t]*["']?[^\s"']{8,}`), repl: "${1}=[REDACTED]", need: []string{"passw"}},
		{re: regexp.MustCompile(`(?i)(pwd)["' \t]*[:=][ \t]*["']?[^\s"'/\[][^\s"']{7,}`), repl: "${1}=[REDACTED]", need: []string{"pwd"}}, // not PWD=/a/directory
		{re: regexp.MustCompile(`(?i)eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), repl: "[REDACTED_JWT]", need: []string{"eyj"}},
		// A password in a URL's userinfo: postgres://user:secret@db/x,
		// https://oauth2:token@git.example.com/repo.git.
		{re: regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^\s:/?#@"'<>]+:)[^\s/?#@"'<>]+@`), repl: "${1}[REDACTED]@", need: []string{"://"}},
		{re: regexp.MustCompile(`(?i)\b(bearer)[ \t]+[A-Za-z0-9._~+/-]{16,}=*`), repl: "${1} [REDACTED]", need: []string{"bearer"}},
		{re: regexp.MustCompile(`(?i)(authorization:[ \t]*basic)[ \t]+[A-Za-z0-9+/]{8,}=*`), repl: "${1} [REDACTED]", need: []string{"authorization:"}},
		{re: regexp.MustCompile(`(?i)gh[pousr]_[A-Za-z0-9]{36}`), repl: "[REDACTED_GITHUB_TOKEN]", need: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
		{re: regexp.MustCompile(`(?i)github_pat_[A-Za-z0-9_]{22,}`), repl: "[REDACTED_GITHUB_TOKEN]", need: []string{"github_pat_"}},
		{re: regexp.MustCompile(`(?i)glpat-[A-Za-z0-9_-]{20}`), repl: "[REDACTED_GITLAB_TOKEN]", need: []string{"glpat-"}},
		{re: regexp.MustCompile(`(?i)\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}`), repl: "[REDACTED_KEY]", need: []string{"sk-"}},
		{re: regexp.MustCompile(`(?i)\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), repl: "[REDACTED_KEY]", need: []string{"k_live_", "k_test_"}},
		{re: regexp.MustCompile(`(?i)\bxox[abprs]-[A-Za-z0-9-]{10,}`), repl: "[REDACTED_SLACK_TOKEN]", need: []string{"xox"}},
		{re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), repl: "[REDACTED_KEY]", need: []string{"aiza"}},
		// \b[A-Za-z0-9]{4,10}_[A-Za-z0-9]{20,}\b, found by patSpans.
		{repl: "[REDACTED_PAT]", keep: mixedToken, need: []string{"_"}, find: patSpans},
	}
})

// mayMatch reports whether r could match the text whose lower-case form
// is lower.
func (r *redaction) mayMatch(lower string) bool {
	for _, n := range r.need {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return len(r.need) == 0
}

// mayMatchBefore is mayMatch for a match starting before limit: one of
// the needed strings starts there.
func (r *redaction) mayMatchBefore(lower string, limit int) bool {
	for _, n := range r.need {
		if i := strings.Index(lower, n); i >= 0 && i < limit {
			return true
		}
	}
	return len(r.need) == 0
}

// matches returns where r matches s, [start, end) pairs.
func (r *redaction) matches(s string) [][]int {
	if r.find != nil {
		return r.find(s)
	}
	return r.re.FindAllStringIndex(s, -1)
}

// apply replaces r's matches in s.
func (r *redaction) apply(s string) string {
	switch {
	case r.find != nil:
		var b strings.Builder
		last := 0
		for _, m := range r.find(s) {
			if r.keep != nil && !r.keep(s[m[0]:m[1]]) {
				continue
			}
			b.WriteString(s[last:m[0]])
			b.WriteString(r.repl)
			last = m[1]
		}
		if last == 0 {
			return s
		}
		b.WriteString(s[last:])
		return b.String()
	case r.keep == nil:
		return r.re.ReplaceAllString(s, r.repl)
	}
	return r.re.ReplaceAllStringFunc(s, func(m string) string {
		if r.keep(m) {
			return r.repl
		}
		return m
	})
}

// patSpans finds what \b[A-Za-z0-9]{4,10}_[A-Za-z0-9]{20,}\b would: words
// (runs of ASCII letters, digits and '_', which \b delimits) made of 4 to
// 10 letters or digits, one '_', and 20 or more letters or digits.
func patSpans(s string) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		if w := s[i:j]; len(w) >= 25 {
			if u := strings.IndexByte(w, '_'); u >= 4 && u <= 10 && len(w)-u-1 >= 20 && strings.IndexByte(w[u+1:], '_') < 0 {
				out = append(out, []int{i, j})
			}
		}
		i = j
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Redact replaces secret-shaped strings in s (API keys, tokens, passwords,
// private keys; reference §4.4) with placeholders such as [REDACTED_AWS_KEY].
// It is idempotent: Redact(Redact(s)) == Redact(s).
func Redact(s string) string {
	lower := strings.ToLower(s)
	for i := range redactions() {
		r := &redactions()[i]
		if !r.mayMatch(lower) {
			continue
		}
		if out := r.apply(s); out != s {
			s, lower = out, strings.ToLower(out)
		}
	}
	return s
}

// mixedToken reports whether the part of a PAT-shaped match after its first
// '_' mixes at least two of digits, lower and upper case letters.
func mixedToken(m string) bool {
	_, tok, _ := strings.Cut(m, "_")
	var digit, lower, upper int
	for _, c := range tok {
		switch {
		case c >= '0' && c <= '9':
			digit = 1
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upper = 1
		}
	}
	return digit+lower+upper >= 2
}

// scrub replaces every occurrence of each secret (at least 4 bytes long,
// shorter ones would hit innocent text) in s with [REDACTED_SECRET]: the
// exact-value scrub for credentials a tool was handed.
func scrub(s string, secrets ...string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[REDACTED_SECRET]")
		}
	}
	return s
}

// RedactReport is Redact that also says whether anything was replaced,
// for callers that record that something was (the audit log).
func RedactReport(s string) (string, bool) {
	out := Redact(s)
	return out, out != s
}

// Limits of a StreamRedactor's hold-back.
const (
	// redactWindow is how far back from the end of what it has a
	// StreamRedactor looks for a secret in progress: longer than any
	// token, key or JWT a pattern matches, short of a private key block,
	// which is held from its BEGIN line on.
	redactWindow = 8 << 10
	// maxRedactHold bounds what is held back at all. Past it the oldest
	// bytes go out, redacted as far as they can be, so one secret longer
	// than this (a private key block of over 64 KiB) could be cut.
	maxRedactHold = 64 << 10
	// maxTrailingRun bounds the trailing run of non-blank bytes held back
	// as the start of a word a secret may begin with ("pass|word=…").
	maxTrailingRun = 256
)

// redactCompletions are what the text held at the end of a stream is
// tried with, to see whether it could be the start of a secret: a run of
// token characters (a key, an API token), one after "=" (password=…), and
// the rest of a JWT. A pattern that then matches across the end means
// the end may be a secret in progress.
var redactCompletions = sync.OnceValue(func() []string {
	tok := strings.Repeat("Aa0", 16) // past the longest fixed-length token (40)
	return []string{tok, "=" + tok, ".eyJ" + tok + "." + tok, " " + tok, " basic " + tok}
})

// A StreamRedactor redacts text that arrives in pieces (a command's
// output as it streams), so that a secret split between two pieces is
// still caught: it holds back the end of what it was given while that end
// could be the start of a secret (a word in progress, a match that the
// next bytes could extend, a private key block without its END line), up
// to maxRedactHold bytes, and passes the rest on redacted. Flush passes on
// what is held, for the end of the stream or a pause in it (the caller
// decides; a secret printed in two pieces with a pause between them can
// then get through). Pieces and output are bytes of UTF-8 text; a cut
// never splits a character. It is not safe for concurrent use.
type StreamRedactor struct {
	held     []byte
	redacted bool
}

// Write takes the next piece of the stream and returns what can be passed
// on now, redacted.
func (r *StreamRedactor) Write(p []byte) []byte {
	r.held = append(r.held, p...)
	cut := holdFrom(r.held)
	if cut == 0 {
		return nil
	}
	out := r.redact(r.held[:cut])
	r.held = append(r.held[:0], r.held[cut:]...)
	return out
}

// Flush returns what is held back, redacted, and holds nothing after.
func (r *StreamRedactor) Flush() []byte {
	if len(r.held) == 0 {
		return nil
	}
	out := r.redact(r.held)
	r.held = r.held[:0]
	return out
}

// Held is how many bytes of input are held back.
func (r *StreamRedactor) Held() int { return len(r.held) }

// Redacted reports whether anything was replaced so far.
func (r *StreamRedactor) Redacted() bool { return r.redacted }

func (r *StreamRedactor) redact(b []byte) []byte {
	s, changed := RedactReport(string(b))
	r.redacted = r.redacted || changed
	return []byte(s)
}

// holdFrom returns where the part of b to hold back starts: len(b) when
// nothing needs holding. No match of a redaction may straddle the cut, so
// the part before it redacts as it would whole.
func holdFrom(b []byte) int {
	// The trailing word, a secret's first bytes perhaps ("api_ke|y=…").
	cut := len(b)
	for cut > 0 && len(b)-cut < maxTrailingRun && !isBlank(b[cut-1]) {
		cut--
	}
	// Matches the next bytes could extend or complete lie in the last few
	// words (a keyword, a separator, a value: "Authorization: Basic x…"),
	// or in the last private key block.
	from := len(b)
	for words := 0; words < 4 && from > 0 && len(b)-from < redactWindow; words++ {
		for from > 0 && isBlank(b[from-1]) {
			from--
		}
		for from > 0 && !isBlank(b[from-1]) && len(b)-from < redactWindow {
			from--
		}
	}
	// The first BEGIN of a private key block still open holds all after
	// it (the cut-off pattern would redact all of it).
	base := max(0, len(b)-maxRedactHold)
	lower := bytes.ToLower(b[base:]) // the patterns ignore case
	for i := 0; ; {
		j := bytes.Index(lower[i:], []byte("-----begin "))
		if j < 0 {
			break
		}
		at := base + i + j
		from = min(from, at)
		if privateBlockOpen(b[at:]) {
			cut = min(cut, at)
			break
		}
		i += j + 1
	}
	if i := bytes.LastIndexByte(b, '\n') + 1; i < len(b) && bytes.EqualFold([]byte("-----BEGIN ")[:min(11, len(b)-i)], b[i:min(len(b), i+11)]) {
		cut = min(cut, i) // the start of a BEGIN line
	}
	// A keyword whose value (or the rest of it, "Authorization: B|asic …")
	// may still come: the patterns that allow blanks start with one.
	lineStart := max(bytes.LastIndexByte(b, '\n')+1, len(b)-maxTrailingRun)
	if i := keywordAtEnd(b[lineStart:]); i >= 0 {
		cut = min(cut, lineStart+i)
	}
	// Move the cut back until it is in no match and splits no word ("\b"
	// at a cut would see a boundary the whole text does not have).
	spans := spansNearEnd(b, from)
	for moved := true; moved; {
		moved = false
		for _, sp := range spans {
			if sp.start < cut && sp.end > cut {
				cut, moved = sp.start, true
			}
		}
		for cut > 0 && cut < len(b) && !isBlank(b[cut-1]) && !isBlank(b[cut]) && len(b)-cut < maxRedactHold {
			cut, moved = cut-1, true
		}
	}
	cut = max(cut, len(b)-maxRedactHold)
	for cut > 0 && cut < len(b) && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return cut
}

// span is a match of a redaction in a StreamRedactor's text; end is
// len(text)+1 for one that runs past the end.
type span struct{ start, end int }

// spansNearEnd returns the matches of the redactions in b[from:],
// including those that would run past the end of b once more text comes
// (tried with redactCompletions).
func spansNearEnd(b []byte, from int) []span {
	tail := string(b[from:])
	lowerTail := strings.ToLower(tail)
	inTail := make([]bool, len(redactions()))
	for i := range redactions() {
		inTail[i] = redactions()[i].mayMatch(lowerTail)
	}
	// A match that starts in the tail has a needed string starting there:
	// in the tail, or across its end into the completion (the longest
	// needed string is 25 bytes).
	tailEnd := lowerTail[max(0, len(lowerTail)-31):]
	var spans []span
	for _, c := range append([]string{""}, redactCompletions()...) {
		probe := tail + c
		join := tailEnd + strings.ToLower(c[:min(len(c), 31)])
		for i := range redactions() {
			rd := &redactions()[i]
			if rd.toEnd || !inTail[i] && (c == "" || !rd.mayMatchBefore(join, len(tailEnd))) {
				continue
			}
			for _, m := range rd.matches(probe) {
				switch {
				case m[0] >= len(tail):
				case m[1] > len(tail) || c == "" && m[1] == len(tail):
					spans = append(spans, span{from + m[0], len(b) + 1})
				default:
					spans = append(spans, span{from + m[0], from + m[1]})
				}
			}
		}
	}
	return spans
}

// secretKeywords start the secret patterns that allow blanks in them.
var secretKeywords = []string{
	"api_key", "api-key", "apikey", "api_secret", "secret_key", "access_token", "auth_token",
	"password", "passwd", "pwd", "bearer", "authorization:",
}

// keywordAtEnd returns where, in line (the end of an unfinished line), the
// first of secretKeywords starts that is followed by at most 64 bytes,
// or -1: its value (or the rest of it, "Authorization: B|asic …") may
// still come.
func keywordAtEnd(line []byte) int {
	from := max(0, len(line)-64-len("authorization:"))
	lower := bytes.ToLower(line[from:])
	if len(lower) != len(line)-from {
		from, lower = 0, bytes.ToLower(line) // non-ASCII changed lengths: look at all of it
	}
	first := -1
	for _, kw := range secretKeywords {
		for at := 0; ; {
			i := bytes.Index(lower[at:], []byte(kw))
			if i < 0 {
				break
			}
			if i += at; len(lower)-i-len(kw) <= 64 {
				if first < 0 || from+i < first {
					first = from + i
				}
				break
			}
			at = i + 1
		}
	}
	if first >= 0 && len(lower) != len(line)-from {
		return 0 // offsets are not the line's: hold it all
	}
	return first
}

// privateBlockOpen reports whether block, which starts with "-----BEGIN ",
// is a private key block whose END line has not come yet, or a header not
// yet whole enough to tell.
func privateBlockOpen(block []byte) bool {
	if !bytes.Contains(block[len("-----BEGIN "):], []byte("-----")) {
		return true // the header goes on
	}
	var cutOff, whole []*regexp.Regexp
	for i := range redactions() {
		if rd := &redactions()[i]; rd.toEnd {
			cutOff = append(cutOff, rd.re)
		} else if len(rd.need) > 0 && rd.need[0] == "-----begin " {
			whole = append(whole, rd.re)
		}
	}
	s := string(block)
	for _, re := range cutOff {
		if m := re.FindStringIndex(s); m != nil && m[0] == 0 {
			for _, w := range whole {
				if w.MatchString(s) {
					return false
				}
			}
			return true
		}
	}
	return false // a certificate, a public key: nothing to hide
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
