package secrets

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// FuzzNormalizeHost: an accepted host is stable under normalizing again
// and carries nothing that could change where a URL goes.
func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"api.example.com", "API.Example.com.", "127.0.0.1", "[::1]", "::ffff:10.0.0.1", "a..b", "https://x/", "*.x.com", "x_y.example", "fe80::1%eth0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := normalizeHost(s)
		if err != nil {
			return
		}
		again, err := normalizeHost(h)
		if err != nil || again != h {
			t.Fatalf("normalizeHost(%q) = %q, then %q, %v", s, h, again, err)
		}
		if strings.ContainsAny(h, "/@?#*% \t\r\n") {
			t.Fatalf("normalizeHost(%q) = %q", s, h)
		}
	})
}

// FuzzCheckRequest: an accepted request has an http(s) URL whose host no
// {{secret:…}} can reach, and bounded fields.
func FuzzCheckRequest(f *testing.F) {
	f.Add("GET", "https://api.example.com/x?k={{secret:A}}", 0)
	f.Add("post", "http://{{secret:A}}.example.com/", 10)
	f.Add("", "http://u:p@host/", 61)
	f.Add("GET", "https://[::1]:99999/", 1)
	f.Fuzz(func(t *testing.T, method, u string, timeout int) {
		req := api.HTTPRequest{Method: method, URL: u, Timeout: timeout}
		tmpl, d, err := checkRequest(&req)
		if err != nil {
			return
		}
		if tmpl.Scheme != "http" && tmpl.Scheme != "https" || strings.Contains(tmpl.Host, "{") || hostOf(tmpl.Host) == "" {
			t.Fatalf("accepted %q with host %q", u, tmpl.Host)
		}
		if d <= 0 || req.Timeout > api.MaxHTTPRequestTimeout || !methodRE.MatchString(req.Method) {
			t.Fatalf("accepted timeout %v method %q", d, req.Method)
		}
		// Whatever a value holds, the host it is sent to stays the one checked.
		hr, err := buildRequest(t.Context(), req, map[string]string{"A": "evil.com/@x#"})
		if err == nil && hostOf(hr.URL.Host) != hostOf(tmpl.Host) {
			t.Fatalf("%q: host %q became %q", u, tmpl.Host, hr.URL.Host)
		}
	})
}
