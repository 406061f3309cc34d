package secrets

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// redactor replaces the values of the secrets a request used, and the
// forms a destination commonly echoes them in (URL-escaped, JSON-escaped,
// base64), with [REDACTED_SECRET:NAME].
type redactor struct {
	r *strings.Replacer
}

func newRedactor(values map[string]string) redactor {
	type pair struct{ from, to string }
	var pairs []pair
	for name, v := range values {
		if v == "" {
			continue
		}
		to := "[REDACTED_SECRET:" + name + "]"
		j, _ := json.Marshal(v)
		forms := []string{
			v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1]),
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
	for _, p := range pairs {
		if !seen[p.from] {
			seen[p.from] = true
			args = append(args, p.from, p.to)
		}
	}
	return redactor{strings.NewReplacer(args...)}
}

func (r redactor) apply(s string) string { return r.r.Replace(s) }
