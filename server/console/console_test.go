package console_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/servertest"
)

// browser is a minimal browser for the console: it keeps the session
// cookie by hand, so the tests see exactly what is set.
type browser struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	csrf   string
}

func newBrowser(t *testing.T, base string) *browser { return &browser{t: t, base: base} }

// do sends a request as the console's page would (same origin), with the
// cookie and, when set, the CSRF token; it returns the answer and body.
func (b *browser) do(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	default:
		j, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Origin", b.base)
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	if b.csrf != "" {
		req.Header.Set(console.CSRFHeader, b.csrf)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == console.CookieName {
			if ck.MaxAge < 0 {
				b.cookie = nil
			} else {
				b.cookie = ck
			}
		}
	}
	return resp, data
}

// signIn signs b in with email and password.
func (b *browser) signIn(email, password string) console.SessionInfo {
	b.t.Helper()
	resp, body := b.do("POST", "/ui/session", api.Credentials{Email: email, Password: password})
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	}
	var info console.SessionInfo
	mustJSON(b.t, body, &info)
	b.csrf = info.CSRFToken
	return info
}

func mustJSON(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

func errCode(t *testing.T, body []byte) string {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %s", body)
	}
	return env.Error.Code
}

// apiCall calls the API itself with key.
func apiCall(t *testing.T, base, key, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	b := newBrowser(t, base)
	return b.do(method, path, body, "Authorization", "Bearer "+key, "Origin", "")
}

func signup(t *testing.T, base, email, password string) {
	t.Helper()
	resp, body := apiCall(t, base, "", "POST", "/v1/auth/signup", api.Credentials{Email: email, Password: password})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("signup: %d %s", resp.StatusCode, body)
	}
}

// TestSignInAndOut: email and password give an HttpOnly SameSite=Strict
// cookie holding a key minted for the session; the console's API needs
// the CSRF token for changes; sign-out revokes the key, so the old cookie
// is worth nothing after.
func TestSignInAndOut(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "ada@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)

	resp, body := b.do("GET", "/ui/session", nil)
	if resp.StatusCode != http.StatusUnauthorized || errCode(t, body) != api.CodeUnauthorized {
		t.Fatalf("GET /ui/session signed out: %d %s", resp.StatusCode, body)
	}
	resp, body = b.do("POST", "/ui/session", api.Credentials{Email: "ada@example.com", Password: "wrong password"})
	if resp.StatusCode != http.StatusUnauthorized || errCode(t, body) != api.CodeInvalidCredentials || b.cookie != nil {
		t.Fatalf("wrong password: %d %s, cookie %v", resp.StatusCode, body, b.cookie)
	}

	info := b.signIn("ada@example.com", "correct horse")
	ck := b.cookie
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui/" || ck.MaxAge <= 0 {
		t.Fatalf("session cookie = %+v, want HttpOnly, SameSite=Strict, Path=/ui/", ck)
	}
	if info.Email != "ada@example.com" || info.CSRFToken == "" || strings.Contains(ck.Value, info.CSRFToken) {
		t.Fatalf("session = %+v", info)
	}
	resp, body = b.do("GET", "/ui/session", nil)
	var got console.SessionInfo
	mustJSON(t, body, &got)
	if resp.StatusCode != http.StatusOK || !cmp.Equal(got, info) {
		t.Fatalf("GET /ui/session = %d %+v, want %+v", resp.StatusCode, got, info)
	}

	// The API through the console: reads need the cookie only, changes the token too.
	resp, body = b.do("GET", "/ui/api/v1/api-keys", nil)
	var keys []api.APIKey
	mustJSON(t, body, &keys)
	if resp.StatusCode != http.StatusOK || len(keys) != 1 || keys[0].Name != console.SessionKeyName || keys[0].ID != info.KeyID {
		t.Fatalf("GET /ui/api/v1/api-keys = %d %s", resp.StatusCode, body)
	}
	csrf := b.csrf
	for _, tc := range []struct{ name, token string }{{"none", ""}, {"wrong", csrf[:len(csrf)-2] + "AA"}} {
		b.csrf = tc.token
		resp, body = b.do("POST", "/ui/api/v1/api-keys", api.CreateAPIKeyRequest{Name: "ci"})
		if resp.StatusCode != http.StatusForbidden || errCode(t, body) != api.CodeForbidden {
			t.Errorf("POST with %s CSRF token: %d %s, want 403", tc.name, resp.StatusCode, body)
		}
	}
	b.csrf = csrf
	resp, body = b.do("POST", "/ui/api/v1/api-keys", api.CreateAPIKeyRequest{Name: "ci", Role: "member"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST with the CSRF token: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Content-Security-Policy") != "default-src 'none'; sandbox; frame-ancestors 'none'" {
		t.Errorf("API answer's CSP = %q", resp.Header.Get("Content-Security-Policy"))
	}

	resp, body = b.do("DELETE", "/ui/session", nil)
	if resp.StatusCode != http.StatusNoContent || b.cookie != nil {
		t.Fatalf("sign out: %d %s, cookie %v", resp.StatusCode, body, b.cookie)
	}
	// The old cookie, replayed, is refused everywhere: its key is revoked.
	b.cookie = ck
	for _, path := range []string{"/ui/session", "/ui/api/v1/sandboxes"} {
		resp, body = b.do("GET", path, nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with the signed-out cookie: %d %s, want 401", path, resp.StatusCode, body)
		}
	}
	// Through the console the key's code stays, but the hint is the
	// console's: sign in again, not the format of a key the person never saw.
	b.cookie = ck // GET /ui/session cleared it
	_, body = b.do("GET", "/ui/api/v1/sandboxes", nil)
	var env api.ErrorEnvelope
	mustJSON(t, body, &env)
	if env.Error == nil || env.Error.Code != api.CodeInvalidAPIKey || !strings.Contains(env.Error.Hint, "sign in again") || strings.Contains(env.Error.Hint, "bxk_live_") {
		t.Errorf("GET /ui/api/v1/sandboxes with the signed-out cookie: %s; want invalid_api_key with a hint to sign in again", body)
	}
}

// TestOneTimeLink: an admin key mints a link that signs a browser in once;
// a member key and no key cannot; an unopened link expires and its key is
// revoked.
func TestOneTimeLink(t *testing.T) {
	srv := servertest.New(t)
	resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/ui/links", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	var link console.LinkResponse
	mustJSON(t, body, &link)
	if !strings.HasPrefix(link.Path, "/ui/link/") || time.Until(link.ExpiresAt) > console.DefaultLinkTTL || time.Until(link.ExpiresAt) < time.Minute {
		t.Fatalf("link = %+v", link)
	}
	b := newBrowser(t, srv.BaseURL)
	resp, _ = b.do("GET", link.Path, nil, "Origin", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" || b.cookie == nil {
		t.Fatalf("open link: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), b.cookie)
	}
	resp, body = b.do("GET", "/ui/session", nil)
	var info console.SessionInfo
	mustJSON(t, body, &info)
	if resp.StatusCode != http.StatusOK || info.Email != srv.Account.Email {
		t.Fatalf("session after the link: %d %s", resp.StatusCode, body)
	}
	again := newBrowser(t, srv.BaseURL)
	resp, _ = again.do("GET", link.Path, nil, "Origin", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/signin?link=expired" || again.cookie != nil {
		t.Fatalf("link opened twice: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), again.cookie)
	}

	// Member keys may not mint sessions (POST /v1/api-keys refuses them).
	_, body = apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/v1/api-keys", api.CreateAPIKeyRequest{Name: "agent", Role: "member"})
	var member api.APIKeyCreated
	mustJSON(t, body, &member)
	for _, tc := range []struct {
		name, key string
		status    int
		code      string
	}{
		{"member key", member.Key, http.StatusForbidden, api.CodeForbidden},
		{"no key", "", http.StatusUnauthorized, api.CodeUnauthorized},
		{"bad key", "bxk_live_nope", http.StatusUnauthorized, api.CodeInvalidToken},
	} {
		hdr := []string{"Origin", ""}
		if tc.key == "" {
			hdr = append(hdr, "Authorization", "")
		} else {
			hdr = append(hdr, "Authorization", "Bearer "+tc.key)
		}
		resp, body = newBrowser(t, srv.BaseURL).do("POST", "/ui/links", nil, hdr...)
		if resp.StatusCode != tc.status || errCode(t, body) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
	// A page cannot mint links, even with a key.
	resp, body = newBrowser(t, srv.BaseURL).do("POST", "/ui/links", nil, "Authorization", "Bearer "+srv.APIKey)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /ui/links with an Origin: %d %s, want 403", resp.StatusCode, body)
	}
}

// TestCrossOrigin: another origin can neither sign in through the console
// nor open a terminal's WebSocket with the console's cookie.
func TestCrossOrigin(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "eve@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)
	resp, body := b.do("POST", "/ui/session", api.Credentials{Email: "eve@example.com", Password: "correct horse"}, "Origin", "http://evil.example")
	if resp.StatusCode != http.StatusForbidden || b.cookie != nil {
		t.Fatalf("cross-origin sign-in: %d %s", resp.StatusCode, body)
	}
	b.signIn("eve@example.com", "correct horse")
	ws := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	// Every Upgrade header the WebSocket library accepts is a handshake,
	// as it reads the header: a list of tokens, in any case.
	for _, upgrade := range []string{"websocket", "WebSocket", "websocket, foo/1", "foo/1,websocket", " websocket "} {
		for _, origin := range []string{"http://evil.example", "null", ""} {
			resp, body = b.do("GET", "/ui/api/v1/sandboxes/0b9e0a5e-0000-4000-8000-000000000000/takeover", nil, append(ws, "Upgrade", upgrade, "Origin", origin)...)
			if resp.StatusCode != http.StatusForbidden || errCode(t, body) != api.CodeForbidden {
				t.Errorf("WebSocket (Upgrade: %q) from origin %q: %d %s, want 403", upgrade, origin, resp.StatusCode, body)
			}
		}
	}
	// The same handshake from the console's origin reaches the API, which
	// answers for the (unknown) sandbox.
	resp, body = b.do("GET", "/ui/api/v1/sandboxes/0b9e0a5e-0000-4000-8000-000000000000/takeover", nil, ws...)
	if resp.StatusCode != http.StatusNotFound || errCode(t, body) != api.CodeNotFound {
		t.Errorf("WebSocket from the console: %d %s, want 404 from the API", resp.StatusCode, body)
	}
}

// TestPage: every console path is the page, with a strict policy whose
// nonce changes per answer, and assets of its own origin only.
func TestPage(t *testing.T) {
	srv := servertest.New(t)
	b := newBrowser(t, srv.BaseURL)
	var nonces []string
	for _, path := range []string{"/ui/", "/ui/sandboxes/x/terminal", "/ui/no/such/page"} {
		resp, body := b.do("GET", path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP %q admits other origins or unsafe sources", path, csp)
		}
		_, rest, _ := strings.Cut(csp, "'nonce-")
		nonce, _, _ := strings.Cut(rest, "'")
		nonces = append(nonces, nonce)
		if !bytes.Contains(body, []byte(`nonce="`+nonce+`"`)) {
			t.Errorf("GET %s: the page does not carry the policy's nonce", path)
		}
		if bytes.Contains(body, []byte("http:")) || bytes.Contains(body, []byte("https:")) || bytes.Contains(body, []byte("//")) {
			t.Errorf("GET %s: the page names another origin:\n%s", path, body)
		}
		for _, h := range []string{"X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("GET %s: no %s", path, h)
			}
		}
	}
	if nonces[0] == "" || nonces[0] == nonces[1] || nonces[1] == nonces[2] {
		t.Errorf("nonces %q: want fresh ones", nonces)
	}
	resp, body := b.do("GET", "/ui/assets/app.js", nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") || len(body) < 1000 || etag == "" {
		t.Fatalf("GET app.js: %d %q %d bytes, etag %q", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), etag)
	}
	resp, _ = b.do("GET", "/ui/assets/app.js", nil, "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET app.js with its ETag: %d, want 304", resp.StatusCode)
	}
	// Compressed for a browser that takes gzip: the same bytes, smaller.
	req, _ := http.NewRequest("GET", srv.BaseURL+"/ui/assets/app.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	zresp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer zresp.Body.Close()
	zr, err := gzip.NewReader(zresp.Body)
	if err != nil || zresp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip app.js: %v, Content-Encoding %q", err, zresp.Header.Get("Content-Encoding"))
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, body) || zresp.ContentLength >= int64(len(body)) {
		t.Errorf("gzip app.js: %d bytes for %d, decoded equal %v (%v)", zresp.ContentLength, len(body), bytes.Equal(plain, body), err)
	}
	resp, body = b.do("GET", "/ui/assets/nope.js", nil)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/json" || errCode(t, body) != api.CodeNotFound {
		t.Errorf("GET a missing asset: %d %q %s; want 404 in the error envelope", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = b.do("GET", "/ui/api/v2/x", nil)
	if resp.StatusCode != http.StatusNotFound || errCode(t, body) != api.CodeNotFound {
		t.Errorf("GET /ui/api/v2/x: %d %s", resp.StatusCode, body)
	}
	resp, _ = b.do("GET", "/ui", nil)
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
