package preview

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// appCP is a control plane whose every sandbox runs one app answering
// with the given Set-Cookie lines.
type appCP struct{ setCookies []string }

func (a appCP) Sidecar(context.Context, string, string) (http.RoundTripper, error) {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		for _, c := range a.setCookies {
			h.Add("Set-Cookie", c)
		}
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("app")), Request: r}, nil
	}), nil
}

func (appCP) Audit(context.Context, string, string, string, map[string]any) error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAppCookiesStayInPreview: an app's Set-Cookie reaches the browser
// only scoped to its own preview. Without it, an app on the path form
// (the API's and the console's origin) set the console's session cookie
// for /ui/, signing a visitor's console into the app owner's account, and
// one on the host form set Domain cookies for every other preview and the
// API's domain above the preview domain.
func TestAppCookiesStayInPreview(t *testing.T) {
	appCookies := []string{
		"boxkite_console=k1.attackerkey; Path=/ui/; HttpOnly; SameSite=Strict",
		"boxkite_oauth=x; Path=/oauth/",
		"wide=1; Path=/; Domain=example.com",
		"up=1; Path=/../../ui/",
		"plain=1",
		"rel=1; Path=sub",
		"boxkite_preview=other; Path=/",
		"=novalue",
		"app=ok; Path=/app; Max-Age=60; Secure",
	}
	now := time.Now()
	st := &holdStore{rec: Record{ID: "p1", AccountID: "a", SandboxID: "sb", Port: 8080, TokenHash: hashToken("tok"), ExpiresAt: now.Add(time.Hour)}}
	s, err := New(st, appCP{setCookies: appCookies}, Config{BaseURL: "https://preview.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string, serve func(http.ResponseWriter, *http.Request)) []*http.Cookie {
		t.Helper()
		r := httptest.NewRequest("GET", url, nil)
		r.AddCookie(&http.Cookie{Name: "boxkite_preview", Value: "tok"})
		w := httptest.NewRecorder()
		serve(w, r)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d %s", url, w.Code, w.Body)
		}
		return w.Result().Cookies()
	}
	check := func(form string, got []*http.Cookie, want map[string]string) {
		t.Helper()
		seen := map[string]string{}
		for _, c := range got {
			if c.Domain != "" {
				t.Errorf("%s: cookie %s keeps Domain=%s: it reaches beyond the preview", form, c.Name, c.Domain)
			}
			seen[c.Name] = c.Path
		}
		for name, path := range want {
			if p, ok := seen[name]; !ok || p != path {
				t.Errorf("%s: cookie %s has path %q (set: %t), want %q", form, name, p, ok, path)
			}
		}
		for name := range seen {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: cookie %s reached the browser", form, name)
			}
		}
	}

	path := get("https://api.example.com/preview/sb/8080/", func(w http.ResponseWriter, r *http.Request) {
		if err := s.ServePath(w, r); err != nil {
			t.Fatal(err)
		}
	})
	check("path form", path, map[string]string{
		"boxkite_console": "/preview/sb/8080/ui/",
		"boxkite_oauth":   "/preview/sb/8080/oauth/",
		"wide":            "/preview/sb/8080/",
		"up":              "/preview/sb/8080/../../ui/",
		"plain":           "",
		"rel":             "/preview/sb/8080/",
		"app":             "/preview/sb/8080/app",
	})
	for _, c := range path {
		if slices.Contains([]string{"/ui/", "/oauth/", "/"}, c.Path) {
			t.Errorf("path form: cookie %s for %s of the API's origin", c.Name, c.Path)
		}
	}

	host := get("https://8080-sb.preview.example.com/", s.ServeHTTP)
	check("host form", host, map[string]string{
		"boxkite_console": "/ui/", "boxkite_oauth": "/oauth/", "wide": "/", "up": "/../../ui/",
		"plain": "", "rel": "sub", "app": "/app",
	})
}

// headerCP is a control plane whose every sandbox runs one app answering
// with the given headers.
type headerCP struct{ h http.Header }

func (a headerCP) Sidecar(context.Context, string, string) (http.RoundTripper, error) {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: a.h.Clone(), Body: io.NopCloser(strings.NewReader("app")), Request: r}, nil
	}), nil
}

func (headerCP) Audit(context.Context, string, string, string, map[string]any) error { return nil }

// TestAppOriginWideHeadersDropped: an app's answer keeps its own headers
// but none that sets a policy for the whole origin it is served on (the
// API's and the console's, on the path form): Clear-Site-Data could sign
// a visitor out of the console, NEL and Report-To could have the browser
// report later requests to that origin (preview tokens in the URLs) to the
// app's collector, HSTS and Alt-Svc pin or move the origin's transport.
func TestAppOriginWideHeadersDropped(t *testing.T) {
	app := http.Header{
		"Clear-Site-Data":           {`"cookies", "storage"`},
		"Nel":                       {`{"report_to":"a","max_age":31536000,"success_fraction":1.0,"include_subdomains":true}`},
		"Report-To":                 {`{"group":"a","max_age":31536000,"endpoints":[{"url":"https://collector.example/r"}]}`},
		"Reporting-Endpoints":       {`a="https://collector.example/r"`},
		"Strict-Transport-Security": {"max-age=63072000; includeSubDomains"},
		"Alt-Svc":                   {`h2="collector.example:443"`},
		"Service-Worker-Allowed":    {"/"},
		"Content-Type":              {"text/html"},
		"Cache-Control":             {"no-store"},
		"X-App":                     {"kept"},
	}
	st := &holdStore{rec: Record{ID: "p1", AccountID: "a", SandboxID: "sb", Port: 8080, TokenHash: hashToken("tok"), ExpiresAt: time.Now().Add(time.Hour)}}
	s, err := New(st, headerCP{app}, Config{BaseURL: "https://preview.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		form, url string
		serve     func(http.ResponseWriter, *http.Request)
	}{
		{"path form", "https://api.example.com/preview/sb/8080/", func(w http.ResponseWriter, r *http.Request) {
			if err := s.ServePath(w, r); err != nil {
				t.Fatal(err)
			}
		}},
		{"host form", "https://8080-sb.preview.example.com/", s.ServeHTTP},
	} {
		r := httptest.NewRequest("GET", tc.url, nil)
		r.AddCookie(&http.Cookie{Name: "boxkite_preview", Value: "tok"})
		w := httptest.NewRecorder()
		tc.serve(w, r)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", tc.form, w.Code, w.Body)
		}
		for _, k := range originWide {
			if v := w.Header().Values(k); len(v) > 0 {
				t.Errorf("%s: the app's %s: %q reached the browser", tc.form, k, v)
			}
		}
		for _, k := range []string{"Content-Type", "Cache-Control", "X-App"} {
			if w.Header().Get(k) != app.Get(k) {
				t.Errorf("%s: %s = %q, want the app's %q", tc.form, k, w.Header().Get(k), app.Get(k))
			}
		}
	}
}
