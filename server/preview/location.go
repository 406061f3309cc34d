package preview

import (
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// scopeLocation keeps a path-form app's redirects inside its preview: the
// app's "/" is the preview's prefix, as for its cookies. Left alone, an app
// answering `302 Location: /ui/link/<code>` (a console link its owner
// minted) sent a visitor who opened the preview from outside any page (the
// address bar, a chat or mail client, `boxkite preview --open`) to the
// console with `Sec-Fetch-Site: none`, which the console takes for a link
// opened by hand, and signed them into the owner's account. A Location on
// another host is left as it is: a redirect through another site makes the
// request cross-site. reqPath is the request's public path (escaped).
func scopeLocation(h http.Header, prefix, reqPath, host string) {
	loc := h.Get("Location")
	if loc == "" {
		return
	}
	u, err := url.Parse(asBrowserReads(loc))
	if err != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" {
		h.Set("Location", prefix)
		return
	}
	if u.Host != "" && !sameHost(u.Hostname(), host) {
		return
	}
	base := &url.URL{Path: reqPath}
	r := base.ResolveReference(&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery, Fragment: u.Fragment})
	p := cleanPath(r.Path)
	if !strings.HasPrefix(p, prefix) {
		p = strings.TrimSuffix(prefix, "/") + p
	}
	h.Set("Location", (&url.URL{Path: p, RawQuery: r.RawQuery, Fragment: r.Fragment}).String())
}

// asBrowserReads is a Location as a browser parses it, where that differs
// from url.Parse in ways that move it: tabs and line breaks are removed,
// leading and trailing controls and spaces trimmed, and before the query
// a backslash is a slash and %2e a dot.
func asBrowserReads(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	head, tail := s, ""
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		head, tail = s[:i], s[i:]
	}
	head = strings.ReplaceAll(head, `\`, "/")
	head = strings.ReplaceAll(strings.ReplaceAll(head, "%2e", "."), "%2E", ".")
	return head + tail
}

// sameHost reports whether a Location's host name may be the server's
// own: the request's host name (case and a trailing dot aside), or an IP
// address in any spelling a browser accepts (2130706433, 0x7f.1, [::1]),
// which this check does not try to tell apart.
func sameHost(name, reqHost string) bool {
	if h, _, err := net.SplitHostPort(reqHost); err == nil {
		reqHost = h
	}
	norm := func(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }
	if norm(name) == norm(strings.Trim(reqHost, "[]")) {
		return true
	}
	return strings.Contains(name, ":") || strings.Trim(strings.ToLower(name), "0123456789abcdefx.") == ""
}

// cleanPath is path.Clean keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
