package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
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

// TestLinkCode: a link's code gives back what was sealed with the same
// key only; another key, a changed byte or a cut code give nothing.
func TestLinkCode(t *testing.T) {
	key := bytes.Repeat([]byte{7}, linkKeySize)
	l := link{key: session{keyID: "0b9e0a5e-0000-4000-8000-000000000000", key: "bxk_live_abc-_DEF"}, exp: testNow}
	code, err := sealLink(key, l)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := openLinkCode(key, code); !ok || got.key != l.key || !got.exp.Equal(l.exp) {
		t.Fatalf("openLinkCode = %+v, %v; want %+v", got, ok, l)
	}
	if again, _ := sealLink(key, l); again == code {
		t.Error("two codes of one link are equal (no fresh nonce)")
	}
	other := bytes.Repeat([]byte{8}, linkKeySize)
	flipped := []byte(code)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		key  []byte
		code string
	}{
		"another key": {other, code}, "a changed byte": {key, string(flipped)}, "cut": {key, code[:len(code)-4]},
		"empty": {key, ""}, "not base64": {key, "!!!!"}, "short key": {key[:16], code},
	} {
		if got, ok := openLinkCode(c.key, c.code); ok {
			t.Errorf("%s: opened as %+v", name, got)
		}
	}
	// A sealed key that is not of a session's shape is refused too.
	bad, _ := sealLink(key, link{key: session{keyID: "id", key: "has space"}, exp: testNow})
	if _, ok := openLinkCode(key, bad); ok {
		t.Error("a key with a space opened")
	}
}

func FuzzOpenLinkCode(f *testing.F) {
	key := bytes.Repeat([]byte{7}, linkKeySize)
	code, _ := sealLink(key, link{key: session{keyID: "k1", key: "bxk_live_x"}, exp: testNow})
	for _, s := range []string{code, "", "AAAA", code[:20], code + "A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		l, ok := openLinkCode(key, code)
		if !ok {
			return
		}
		if _, valid := parseSession(l.key.cookieValue()); !valid || l.exp.Unix() <= 0 {
			t.Fatalf("openLinkCode(%q) = %+v", code, l)
		}
	})
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

// TestSignOutFailure: when the API cannot revoke the session's key (here
// 503), sign-out says so and keeps the cookie, so the page can sign out
// again; a key revoked already (401) is a sign-out like any other.
func TestSignOutFailure(t *testing.T) {
	s := session{keyID: "k1", key: "bxk_live_secret"}
	for _, tc := range []struct {
		api, want int
		cleared   bool
	}{
		{http.StatusServiceUnavailable, http.StatusServiceUnavailable, false},
		{http.StatusUnauthorized, http.StatusNoContent, true},
		{http.StatusNoContent, http.StatusNoContent, true},
	} {
		c, err := New(Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodDelete || r.URL.Path != "/v1/api-keys/k1" {
				t.Errorf("unexpected API call %s %s", r.Method, r.URL.Path)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.api)
			if tc.api >= 300 {
				_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"the store is unavailable"}}`))
			}
		})})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("DELETE", "/ui/session", nil)
		req.AddCookie(&http.Cookie{Name: CookieName, Value: s.cookieValue()})
		req.Header.Set(CSRFHeader, s.csrf())
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		cleared := strings.Contains(rec.Header().Get("Set-Cookie"), CookieName+"=;")
		if rec.Code != tc.want || cleared != tc.cleared {
			t.Errorf("API %d: sign-out %d %s, cookie cleared %v; want %d, cleared %v", tc.api, rec.Code, rec.Body, cleared, tc.want, tc.cleared)
		}
	}
}

// TestDeadKeyHint: the API's 401 invalid_api_key (an unknown, revoked or
// expired key) reaches the browser with its code, status and message, but
// with the console's hint, since the key is the session's; every other
// answer passes unchanged.
func TestDeadKeyHint(t *testing.T) {
	s := session{keyID: "k1", key: "bxk_live_secret"}
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		wantHint string // "" for the body unchanged
	}{
		{"revoked", http.StatusUnauthorized, `{"error":{"code":"invalid_api_key","message":"invalid API key","hint":"check the key (bxk_live_ followed by 43 characters)","request_id":"r1"}}`, consoleKeyHint},
		{"expired", http.StatusUnauthorized, `{"error":{"code":"invalid_api_key","message":"API key expired","hint":"make a new key with ` + "`boxkite keys create`" + `"}}`, consoleKeyHint},
		{"other 401", http.StatusUnauthorized, `{"error":{"code":"invalid_token","message":"invalid token","hint":"mint another"}}`, ""},
		{"not json", http.StatusUnauthorized, `invalid_api_key`, ""},
		{"ok", http.StatusOK, `{"hint":"invalid_api_key"}`, ""},
		{"a long 401", http.StatusUnauthorized, `{"error":{"code":"invalid_api_key","message":"` + strings.Repeat("x", 70<<10) + `"}}`, ""},
	} {
		c, err := New(Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body[:3]))
			_, _ = w.Write([]byte(tc.body[3:]))
		})})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/ui/api/v1/sandboxes", nil)
		req.AddCookie(&http.Cookie{Name: CookieName, Value: s.cookieValue()})
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.status)
		}
		if tc.wantHint == "" {
			if rec.Body.String() != tc.body {
				t.Errorf("%s: body %s, want it unchanged: %s", tc.name, rec.Body, tc.body)
			}
			continue
		}
		var in, out api.ErrorEnvelope
		if err := json.Unmarshal([]byte(tc.body), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Error == nil {
			t.Fatalf("%s: not an envelope: %s (%v)", tc.name, rec.Body, err)
		}
		in.Error.Hint = tc.wantHint
		if diff := cmp.Diff(in, out); diff != "" {
			t.Errorf("%s: envelope (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestStreamEndedHint: a stream the API cuts because the session's key was
// revoked or expired while it ran tells the browser user to sign in again,
// not the CLI's `boxkite login`; a demotion keeps its own hint.
func TestStreamEndedHint(t *testing.T) {
	s := session{keyID: "k1", key: "bxk_live_secret"}
	for _, tc := range []struct {
		name  string
		cause error
		want  string
	}{
		{"revoked", authz.ErrCredentialRevoked, consoleKeyHint},
		{"expired", authz.ErrCredentialExpired, consoleKeyHint},
		{"demoted", authz.ErrCredentialDemoted, authz.ErrStreamDemoted.Hint},
	} {
		var got *api.Error
		c, err := New(Config{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithCancelCause(r.Context())
			cancel(tc.cause) // as the revoker cancels a request of the key
			got = authz.StreamEnded(ctx)
		})})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/ui/api/v1/sandboxes/sb1/exec/stream", nil)
		req.AddCookie(&http.Cookie{Name: CookieName, Value: s.cookieValue()})
		c.ServeHTTP(httptest.NewRecorder(), req)
		if got == nil || got.Hint != tc.want {
			t.Errorf("%s: stream ended with %+v, want hint %q", tc.name, got, tc.want)
		}
	}
	// The API's own clients keep the CLI's hint.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(authz.ErrCredentialExpired)
	if got := authz.StreamEnded(ctx); got.Hint != authz.ErrStreamExpired.Hint {
		t.Errorf("outside the console: hint %q, want %q", got.Hint, authz.ErrStreamExpired.Hint)
	}
}
