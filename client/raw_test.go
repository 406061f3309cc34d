package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

func TestDo(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body string
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		switch r.URL.Path {
		case "/v1/missing":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"no such thing","hint":"look elsewhere"}}`)
		case "/v1/moved":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	})
	ctx := context.Background()

	resp, err := c.Do(ctx, "PATCH", "/v1/account?x=1", http.Header{"X-Extra": {"1"}}, strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Status != 200 || string(b) != `{"ok":true}` {
		t.Errorf("Do = %d %q, want 200 {\"ok\":true}", resp.Status, b)
	}
	if got.Method != "PATCH" || got.URL.RawQuery != "x=1" || body != `{"a":1}` {
		t.Errorf("server saw %s ?%s %q", got.Method, got.URL.RawQuery, body)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer bxk_live_test" {
		t.Errorf("Authorization = %q", a)
	}
	if got.Header.Get("X-Extra") != "1" || got.Header.Get("User-Agent") != "boxkite-test/1" {
		t.Errorf("headers = %v", got.Header)
	}

	_, err = c.Do(ctx, "GET", "/v1/missing", nil, nil)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != "not_found" || e.Hint != "look elsewhere" || e.Status != 404 {
		t.Errorf("Do(missing) error = %#v, want the envelope's not_found", err)
	}
	// A redirect is not followed: it would take the key elsewhere.
	if _, err := c.Do(ctx, "GET", "/v1/moved", nil, nil); err == nil {
		t.Errorf("Do(moved) followed the redirect")
	}
	for _, bad := range []string{"http://elsewhere.invalid/v1/x", "//elsewhere.invalid/v1/x", "v1/x", ""} {
		got = nil
		if _, err := c.Do(ctx, "GET", bad, nil, nil); err == nil || got != nil {
			t.Errorf("Do(%q) = %v, sent %v; want refused before sending", bad, err, got != nil)
		}
	}
}

// TestDoNotBoxkite: a failed answer that is not boxkite's comes back as
// a *RawError holding its body and headers, for `boxkite api` to print;
// it is still the *api.Error bad_response for everyone else.
func TestDoNotBoxkite(t *testing.T) {
	t.Parallel()
	const page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Proxy", "nginx")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, page)
	})
	_, err := c.Do(context.Background(), http.MethodGet, "/v1/sandboxes", nil, nil)
	re, ok := errors.AsType[*client.RawError](err)
	if !ok || string(re.Body) != page || re.Header.Get("X-Proxy") != "nginx" {
		t.Fatalf("Do() error = %#v, want a *RawError with the page and its headers", err)
	}
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != client.CodeBadResponse || e.Status != http.StatusBadGateway {
		t.Errorf("Do() error = %v, want it to unwrap to bad_response 502", err)
	}
}
