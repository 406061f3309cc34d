package secrets

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
)

// Redactor replaces the values of secrets (name → value), and the forms
// they are commonly echoed in (URL-escaped, JSON-escaped, base64), with
// [REDACTED_SECRET:NAME].
type Redactor struct {
	r       *strings.Replacer
	longest int // bytes of the longest form replaced
}

// NewRedactor returns the Redactor of values (secret name → value).
func NewRedactor(values map[string]string) Redactor { return newRedactor(values) }

func newRedactor(values map[string]string) Redactor {
	type pair struct{ from, to string }
	var pairs []pair
	for name, v := range values {
		if v == "" {
			continue
		}
		to := "[REDACTED_SECRET:" + name + "]"
		j, _ := json.Marshal(v)
		var plain strings.Builder
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		p := strings.TrimSuffix(plain.String(), "\n")
		forms := []string{
			v, string(j[1 : len(j)-1]), p[1 : len(p)-1],
			base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
		}
		forms = append(forms, urlForms(v)...)
		forms = append(forms, jsonForms(p[1:len(p)-1])...)
		for _, f := range forms {
			pairs = append(pairs, pair{f, to})
		}
	}
	// Longest first: a strings.Replacer tries its pairs in order at each
	// position, so a value's longer encodings win over a prefix of them.
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(len(b.from), len(a.from)) })
	var args []string
	seen := map[string]bool{}
	longest := 0
	for _, p := range pairs {
		if !seen[p.from] {
			seen[p.from] = true
			args = append(args, p.from, p.to)
			longest = max(longest, len(p.from))
		}
	}
	return Redactor{strings.NewReplacer(args...), longest}
}

// Apply returns s with every value replaced.
func (r Redactor) Apply(s string) string { return r.r.Replace(s) }

func (r Redactor) apply(s string) string { return r.r.Replace(s) }

// urlForms returns the percent-encoded spellings of v a destination may
// echo: Go's query, path-segment and path escaping, a query's with %20 for
// a space (as JavaScript's encodeURIComponent writes it), each also with
// lower-case hex digits (which decoders accept as well).
func urlForms(v string) []string {
	q := url.QueryEscape(v)
	forms := []string{q, url.PathEscape(v), (&url.URL{Path: v}).EscapedPath(), strings.ReplaceAll(q, "+", "%20")}
	for _, f := range forms[:4] {
		forms = append(forms, lowerHexEscapes(f, '%', 2))
	}
	return forms
}

// jsonForms returns the other spellings of the JSON string body plain (Go's
// encoding of a value, HTML left unescaped) that common encoders write:
// `/` as `\/` (PHP's json_encode), every non-ASCII character as \uXXXX
// with surrogate pairs (Python's json.dumps, Flask's jsonify), with
// lower- or upper-case hex digits, and their combinations.
func jsonForms(plain string) []string {
	var ascii strings.Builder
	for _, r := range plain {
		switch {
		case r < 0x80:
			ascii.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&ascii, "\\u%04x\\u%04x", hi, lo)
		default:
			fmt.Fprintf(&ascii, "\\u%04x", r)
		}
	}
	a := ascii.String()
	var forms []string
	for _, f := range []string{plain, a, upperHexEscapes(a)} {
		forms = append(forms, f, strings.ReplaceAll(f, "/", `\/`))
	}
	return forms[1:]
}

// lowerHexEscapes returns s with the n hex digits after each esc in lower case.
func lowerHexEscapes(s string, esc byte, n int) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		if b[i] == esc {
			for k := i + 1; k <= i+n && k < len(b); k++ {
				if b[k] >= 'A' && b[k] <= 'F' {
					b[k] += 'a' - 'A'
				}
			}
		}
	}
	return string(b)
}

// upperHexEscapes returns s with the hex digits of each \uXXXX in upper case.
func upperHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\\' && b[i+1] == 'u' {
			for k := i + 2; k < i+6 && k < len(b); k++ {
				if b[k] >= 'a' && b[k] <= 'f' {
					b[k] -= 'a' - 'A'
				}
			}
			i += 5
		}
	}
	return string(b)
}
