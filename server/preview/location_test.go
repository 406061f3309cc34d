package preview

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestScopeLocation: a path-form app's redirect stays beneath its preview
// however it is spelled, as a browser would read it; one to another host
// is left alone.
func TestScopeLocation(t *testing.T) {
	const prefix, reqPath, host = "/preview/sb/8080/", "/preview/sb/8080/a/b", "api.example.com:443"
	for _, tt := range []struct{ loc, want string }{
		{"/ui/link/CODE", "/preview/sb/8080/ui/link/CODE"},
		{"../../../../ui/link/C", "/preview/sb/8080/ui/link/C"},
		{"/preview/sb/8080/../../../ui/x", "/preview/sb/8080/ui/x"},
		{"/preview/sb/8080/a%2F..%2F..%2F..%2F..%2Fui/link/C", "/preview/sb/8080/ui/link/C"},
		{"%2e%2e/%2E%2E/%2e%2e/%2e%2e/ui/", "/preview/sb/8080/ui/"},
		{"https://api.example.com/ui/link/C", "/preview/sb/8080/ui/link/C"},
		{"https://API.EXAMPLE.COM./ui/", "/preview/sb/8080/ui/"},
		{"//api.example.com/oauth/authorize?x=1", "/preview/sb/8080/oauth/authorize?x=1"},
		{"http://2130706433/ui/", "/preview/sb/8080/ui/"},
		{"http://[::1]/ui/", "/preview/sb/8080/ui/"},
		{"\t/u\ni/\r", "/preview/sb/8080/ui/"},
		{`/\ui/x`, `/\ui/x`}, // //ui/x: the host "ui"
		{"javascript:alert(1)", prefix},
		{"/preview/sb/80801/x", "/preview/sb/8080/preview/sb/80801/x"},
		{"/preview/sb/8080/ok?x=1#f", "/preview/sb/8080/ok?x=1#f"},
		{"next", "/preview/sb/8080/a/next"},
		{"?page=2", "/preview/sb/8080/a/b?page=2"},
		{"https://auth.example.org/login?next=/ui/", "https://auth.example.org/login?next=/ui/"},
		{`/\evil.example/x`, `/\evil.example/x`},
	} {
		h := http.Header{"Location": {tt.loc}}
		scopeLocation(h, prefix, reqPath, host)
		if got := h.Get("Location"); got != tt.want {
			t.Errorf("Location %q became %q, want %q", tt.loc, got, tt.want)
		}
	}
}

// TestAppRedirectStaysInPreview: through the proxy, a path-form app's
// `302 Location: /ui/link/<code>` stays in its preview (the console would
// take a link reached by that redirect from a preview opened by hand for
// one opened by hand, Sec-Fetch-Site: none, and sign the visitor into the
// app owner's account); the host form, an origin of its own, is left alone.
func TestAppRedirectStaysInPreview(t *testing.T) {
	st := &holdStore{rec: Record{ID: "p1", AccountID: "a", SandboxID: "sb", Port: 8080, TokenHash: hashToken("tok"), ExpiresAt: time.Now().Add(time.Hour)}}
	s, err := New(st, redirectCP{}, Config{BaseURL: "https://preview.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "https://api.example.com/preview/sb/8080/start", nil)
	r.AddCookie(&http.Cookie{Name: "boxkite_preview", Value: "tok"})
	w := httptest.NewRecorder()
	if err := s.ServePath(w, r); err != nil {
		t.Fatal(err)
	}
	if got := w.Header().Get("Location"); w.Code != http.StatusFound || got != "/preview/sb/8080/ui/link/CODE" {
		t.Errorf("path form: %d Location %q, want 302 to /preview/sb/8080/ui/link/CODE", w.Code, got)
	}
	r = httptest.NewRequest("GET", "https://8080-sb.preview.example.com/start", nil)
	r.AddCookie(&http.Cookie{Name: "boxkite_preview", Value: "tok"})
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if got := w.Header().Get("Location"); w.Code != http.StatusFound || got != "/ui/link/CODE" {
		t.Errorf("host form: %d Location %q, want the app's own", w.Code, got)
	}
}

// redirectCP's app answers every request 302 to /ui/link/CODE.
type redirectCP struct{ headerCP }

func (redirectCP) Sidecar(context.Context, string, string) (http.RoundTripper, error) {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {"/ui/link/CODE"}}, Body: http.NoBody, Request: r}, nil
	}), nil
}
