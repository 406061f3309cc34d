package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProxyRewrites: what reaches the API from /ui/api/ is the API path
// with the session's key, and nothing of the browser's session: no
// cookie, no CSRF token, no ?api_key=.
func TestProxyRewrites(t *testing.T) {
	var got *http.Request
	c, err := New(Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		w.WriteHeader(http.StatusTeapot)
	})})
	if err != nil {
		t.Fatal(err)
	}
	s := session{keyID: "k1", key: "bxk_live_secret"}
	req := httptest.NewRequest("POST", "/ui/api/v1/sandboxes/a%2Fb/files/raw?path=/x&api_key=other", strings.NewReader("body"))
	req.AddCookie(&http.Cookie{Name: CookieName, Value: s.cookieValue()})
	req.AddCookie(&http.Cookie{Name: "other", Value: "1"})
	req.Header.Set(CSRFHeader, s.csrf())
	req.Header.Set("Authorization", "Bearer forged")
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != http.StatusTeapot || got == nil {
		t.Fatalf("status %d, reached the API: %v", rec.Code, got != nil)
	}
	checks := map[string][2]string{
		"path":          {got.URL.Path, "/v1/sandboxes/a/b/files/raw"},
		"raw path":      {got.URL.EscapedPath(), "/v1/sandboxes/a%2Fb/files/raw"},
		"query":         {got.URL.RawQuery, "path=%2Fx"},
		"authorization": {got.Header.Get("Authorization"), "Bearer bxk_live_secret"},
		"cookie":        {got.Header.Get("Cookie"), ""},
		"csrf":          {got.Header.Get(CSRFHeader), ""},
		"request uri":   {got.RequestURI, "/v1/sandboxes/a%2Fb/files/raw?path=%2Fx"},
		"csp":           {rec.Header().Get("Content-Security-Policy"), dataCSP},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

func TestParseSession(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0b9e0a5e-0000-4000-8000-000000000000.bxk_live_abc-_DEF", true},
		{"", false},
		{".bxk_live_x", false},
		{"id.", false},
		{"id.key.more", false},
		{"id.key;x", false},
		{"id.key with space", false},
		{"id." + strings.Repeat("k", 129), false},
	} {
		s, ok := parseSession(tc.in)
		if ok != tc.ok || (ok && s.cookieValue() != tc.in) {
			t.Errorf("parseSession(%q) = %+v, %v; want ok %v", tc.in, s, ok, tc.ok)
		}
	}
}

func FuzzParseSession(f *testing.F) {
	for _, s := range []string{"a.b", "0b9e0a5e-0000-4000-8000-000000000000.bxk_live_x", "..", "a.b.c", "é.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, ok := parseSession(v)
		if !ok {
			return
		}
		if s.cookieValue() != v || s.keyID == "" || s.key == "" || strings.ContainsAny(s.key, ".;, \"\\") {
			t.Fatalf("parseSession(%q) = %+v", v, s)
		}
		if c := (&http.Cookie{Name: CookieName, Value: v}).String(); !strings.HasSuffix(c, "="+v) {
			t.Fatalf("cookie value %q is not sent as is: %s", v, c)
		}
	})
}

func FuzzAPIPath(f *testing.F) {
	for _, s := range []string{"/ui/api/v1/sandboxes", "/ui/api/v1/", "/ui/api/v2/x", "/ui/api", "/ui/apiv1/x", "/ui/api/health", "/ui/api//v1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, ok := apiPath(p)
		if !ok {
			return
		}
		if !strings.HasPrefix(got, "/v1/") || "/ui/api"+got != p {
			t.Fatalf("apiPath(%q) = %q", p, got)
		}
	})
}

// TestLinksExpire: a link taken after its expiry is refused, and its
// session comes back to be revoked; the number waiting is bounded.
func TestLinksExpire(t *testing.T) {
	l := newLinks()
	now := testNow
	l.add("a", session{keyID: "ka"}, now.Add(DefaultLinkTTL), now)
	l.add("b", session{keyID: "kb"}, now.Add(DefaultLinkTTL), now)
	if s, ok, dead := l.take("a", now.Add(time.Second)); !ok || s.keyID != "ka" || len(dead) != 0 {
		t.Fatalf("take a = %+v %v %v", s, ok, dead)
	}
	if _, ok, _ := l.take("a", now.Add(time.Second)); ok {
		t.Fatal("a taken twice")
	}
	_, ok, dead := l.take("b", now.Add(DefaultLinkTTL))
	if ok || len(dead) != 1 || dead[0].keyID != "kb" {
		t.Fatalf("expired b: ok %v, dead %v", ok, dead)
	}
	var pushed int
	for i := range maxPendingLinks + 5 {
		pushed += len(l.add(string(rune('a'+i%26))+strings.Repeat("x", i), session{keyID: "k"}, now.Add(time.Hour), now))
	}
	if len(l.m) > maxPendingLinks || pushed != 5 {
		t.Errorf("%d links waiting, %d pushed out; want at most %d, 5", len(l.m), pushed, maxPendingLinks)
	}
}

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"": false, "gzip": true, "br, gzip;q=0.8": true, "GZIP": true, "gzip;q=0": false, "deflate": false, "x-gzip": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", in)
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}
