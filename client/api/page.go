package api

import (
	"net/http"
	"net/url"
	"strings"
)

// MaxListLimit is the largest limit the paged lists take
// (GET /v1/sandboxes, /v1/images, /v1/webhooks).
const MaxListLimit = 1000

// MaxSandboxListLimit is the largest limit GET /v1/sandboxes takes.
const MaxSandboxListLimit = MaxListLimit

// NextLink returns the target of the rel="next" link in h's Link headers
// (RFC 8288), as the list routes that page give it ("" when there is
// none: the last page). The target is a reference relative to the
// request's URL, such as "/v1/sandboxes?limit=30&cursor=…".
func NextLink(h http.Header) string {
	for _, v := range h.Values("Link") {
		for link := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			target = strings.TrimSpace(target)
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for p := range strings.SplitSeq(params, ";") {
				name, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(name, "rel") && relHas(strings.Trim(val, `"`), "next") {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}

// relHas reports whether a rel value (space-separated relation types)
// holds want.
func relHas(rel, want string) bool {
	for r := range strings.FieldsSeq(rel) {
		if strings.EqualFold(r, want) {
			return true
		}
	}
	return false
}

// NextCursor returns the cursor query parameter of h's rel="next" link,
// "" when there is no next page.
func NextCursor(h http.Header) string {
	u, err := url.Parse(NextLink(h))
	if err != nil {
		return ""
	}
	return u.Query().Get("cursor")
}
