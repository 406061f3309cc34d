package preview

import (
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// scopeSetCookies keeps the cookies an app sets to its own preview. A
// cookie's scope is a domain and a path, not an origin: left alone, an
// app on the path form (served on the API's and the console's origin)
// could set `boxkite_console` for /ui/ or the OAuth session for /oauth/,
// signing a visitor's console into the app owner's account, and an app on
// the host form could set a Domain cookie for every preview under the
// preview domain, or for the API's domain above it. So every Set-Cookie is
// made host-only (no Domain), its Path is moved beneath the preview's
// cookie path (the path form's "/" is the app's root), and the preview's
// own cookie name and what does not parse are dropped.
func scopeSetCookies(h http.Header, cookiePath string) {
	lines := h.Values("Set-Cookie")
	if len(lines) == 0 {
		return
	}
	h.Del("Set-Cookie")
	for _, line := range lines {
		c, err := http.ParseSetCookie(line)
		if err != nil || c.Name == api.PreviewCookie {
			continue
		}
		c.Domain = ""
		if cookiePath != "/" {
			c.Path = scopedPath(c.Path, cookiePath)
		}
		if v := c.String(); v != "" {
			h.Add("Set-Cookie", v)
		}
	}
}

// scopedPath is an app's cookie path beneath the path form's prefix
// (which ends in "/"). No path keeps the browser's default, the request's
// directory, which is beneath the prefix already.
func scopedPath(p, prefix string) string {
	switch {
	case p == "":
		return ""
	case !strings.HasPrefix(p, "/"):
		return prefix
	default:
		return strings.TrimSuffix(prefix, "/") + p
	}
}

// originWide are response headers that set a policy for the whole origin
// (or, for Clear-Site-Data's cookies, the whole registrable domain) the
// browser reached, beyond the page that carried them. A path-form preview
// shares its origin with the API and the console, and a host-form one
// sits under the preview domain: an app may set none of them. Clear-Site-Data
// would sign visitors out of the console; NEL with Report-To would have
// the browser report every later request to the origin, URLs with their
// preview tokens included, to the app's collector; Strict-Transport-Security
// and Alt-Svc would pin or redirect the origin's transport.
var originWide = []string{
	"Clear-Site-Data", "Nel", "Report-To", "Reporting-Endpoints", "Strict-Transport-Security", "Alt-Svc",
	"Public-Key-Pins", "Public-Key-Pins-Report-Only", "Expect-Ct", "Service-Worker-Allowed", "Set-Login",
}

// dropOriginWide removes the originWide headers from an app's answer.
func dropOriginWide(h http.Header) {
	for _, k := range originWide {
		h.Del(k)
	}
}
