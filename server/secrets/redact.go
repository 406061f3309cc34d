package secrets

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
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
			v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1]), p[1 : len(p)-1],
			base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
		}
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
