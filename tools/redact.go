package tools

import (
	"regexp"
	"strings"
	"sync"
)

// redaction replaces what re matches with repl (regexp.Expand syntax), or,
// when keep is set, only the matches keep accepts.
type redaction struct {
	re   *regexp.Regexp
	repl string
	keep func(match string) bool
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
//     keys, PKCS#8 and PGP private key blocks, and a private key block cut
//     off before its END line.
//
// It is a courtesy, not a boundary (SECURITY.md): it catches secrets an
// agent prints by accident, not ones a program sets out to hide.
//
// They are compiled on first use: compiling them is most of what the CLI's
// start-up would otherwise spend in this package (about 3 ms, 3,000
// allocations), and most commands never redact.
var redactions = sync.OnceValue(func() []redaction {
	return []redaction{
		{re: regexp.MustCompile(`(?is)-----BEGIN (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED) )?PRIVATE KEY-----.*?-----END (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED) )?PRIVATE KEY-----`), repl: "[REDACTED_SSH_PRIVATE_KEY]"},
		{re: regexp.MustCompile(`(?is)-----BEGIN PGP PRIVATE KEY BLOCK-----.*?-----END PGP PRIVATE KEY BLOCK-----`), repl: "[REDACTED_PGP_PRIVATE_KEY]"},
		{re: regexp.MustCompile(`(?is)-----BEGIN (?:(?:OPENSSH|RSA|EC|DSA|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----.*`), repl: "[REDACTED_SSH_PRIVATE_KEY]"}, // cut off before its END
		{re: regexp.MustCompile(`(?i)bxk_live_[A-Za-z0-9_-]{20,}`), repl: "[REDACTED_BOXKITE_KEY]"},
		{re: regexp.MustCompile(`(?i)(api[_-]?key|apikey|api_secret|secret_key|access_token|auth_token)["\s:=]+["']?[\w-]{20,}`), repl: "[REDACTED_KEY]"},
		{re: regexp.MustCompile(`(?i)AKIA[0-9A-Z]{16}`), repl: "[REDACTED_AWS_KEY]"},
		{re: regexp.MustCompile(`(?i)aws_secret_access_key["\s:=]+["']?[\w/+=]{40}`), repl: "[REDACTED_AWS_SECRET]"},
		{re: regexp.MustCompile(`(?i)DefaultEndpointsProtocol=https;AccountName=\w+;AccountKey=[\w/+=]+`), repl: "[REDACTED_AZURE_CONN_STRING]"},
		{re: regexp.MustCompile(`(?i)AccountKey=[\w/+=]+`), repl: "AccountKey=[REDACTED]"},
		{re: regexp.MustCompile(`(?i)(password|passwd)["' \t]*[:=][ \t]*["']?[^\s"']{8,}`), repl: "${1}=[REDACTED]"},
		{re: regexp.MustCompile(`(?i)(pwd)["' \t]*[:=][ \t]*["']?[^\s"'/\[][^\s"']{7,}`), repl: "${1}=[REDACTED]"}, // not PWD=/a/directory
		{re: regexp.MustCompile(`(?i)eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), repl: "[REDACTED_JWT]"},
		{re: regexp.MustCompile(`(?i)\b(bearer)[ \t]+[A-Za-z0-9._~+/-]{16,}=*`), repl: "${1} [REDACTED]"},
		{re: regexp.MustCompile(`(?i)(authorization:[ \t]*basic)[ \t]+[A-Za-z0-9+/]{8,}=*`), repl: "${1} [REDACTED]"},
		{re: regexp.MustCompile(`(?i)gh[pousr]_[A-Za-z0-9]{36}`), repl: "[REDACTED_GITHUB_TOKEN]"},
		{re: regexp.MustCompile(`(?i)github_pat_[A-Za-z0-9_]{22,}`), repl: "[REDACTED_GITHUB_TOKEN]"},
		{re: regexp.MustCompile(`(?i)glpat-[A-Za-z0-9_-]{20}`), repl: "[REDACTED_GITLAB_TOKEN]"},
		{re: regexp.MustCompile(`(?i)\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}`), repl: "[REDACTED_KEY]"},
		{re: regexp.MustCompile(`(?i)\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), repl: "[REDACTED_KEY]"},
		{re: regexp.MustCompile(`(?i)\bxox[abprs]-[A-Za-z0-9-]{10,}`), repl: "[REDACTED_SLACK_TOKEN]"},
		{re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), repl: "[REDACTED_KEY]"},
		{re: regexp.MustCompile(`\b[A-Za-z0-9]{4,10}_[A-Za-z0-9]{20,}\b`), repl: "[REDACTED_PAT]", keep: mixedToken},
	}
})

// Redact replaces secret-shaped strings in s (API keys, tokens, passwords,
// private keys; reference §4.4) with placeholders such as [REDACTED_AWS_KEY].
// It is idempotent: Redact(Redact(s)) == Redact(s).
func Redact(s string) string {
	for _, r := range redactions() {
		if r.keep == nil {
			s = r.re.ReplaceAllString(s, r.repl)
			continue
		}
		s = r.re.ReplaceAllStringFunc(s, func(m string) string {
			if r.keep(m) {
				return r.repl
			}
			return m
		})
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
