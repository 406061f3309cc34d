package sidecar

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/testport"
)

// TestPreviewProxy: /preview/{port}/ reaches an app on 127.0.0.1:port,
// paths, queries and WebSocket upgrades included, without the sidecar's
// token; a port nothing listens on is 502, the egress proxy's is refused.
func TestPreviewProxy(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			typ, b, err := c.Read(r.Context())
			if err == nil {
				_ = c.Write(r.Context(), typ, append([]byte("pong:"), b...))
			}
			return
		}
		fmt.Fprintf(w, "path=%s query=%s host=%s token=%q fwd=%s", r.URL.EscapedPath(), r.URL.RawQuery, r.Host, r.Header.Get(api.HeaderSidecarToken), r.Header.Get("X-Forwarded-Host"))
	}))
	defer app.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(app.URL, "http://"))
	base, _ := newToolServer(t, Options{})

	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set(api.HeaderSidecarToken, testToken)
		req.Header.Set("X-Forwarded-Host", "8080-sb.localhost:8090")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/preview/" + port + "/static/a%2Fb.js?v=1")
	if want := "path=/static/a%2Fb.js query=v=1 host=localhost:" + port + ` token="" fwd=8080-sb.localhost:8090`; code != 200 || body != want {
		t.Errorf("proxied: %d %q, want %q", code, body, want)
	}
	if code, body := get("/preview/" + port); code != 200 || !strings.HasPrefix(body, "path=/ ") {
		t.Errorf("no trailing slash: %d %q", code, body)
	}
	// The app's path as sent, never cleaned into a redirect to a path of
	// the sidecar's (which the browser would follow on the preview's host).
	for _, p := range []string{"//cdn/x.js", "/a/../b", "/./", "/a//b/"} {
		req, _ := http.NewRequest("GET", base+"/preview/"+port+p, nil)
		req.Header.Set(api.HeaderSidecarToken, testToken)
		resp, err := http.DefaultTransport.RoundTrip(req) // redirects not followed
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "path="+p+" ") {
			t.Errorf("%s: %d %q (Location %q), want the app's answer for %s", p, resp.StatusCode, b, resp.Header.Get("Location"), p)
		}
	}

	c, _, err := websocket.Dial(t.Context(), strings.Replace(base, "http", "ws", 1)+"/preview/"+port+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{api.HeaderSidecarToken: {testToken}}})
	if err != nil {
		t.Fatalf("websocket through the preview: %v", err)
	}
	defer c.CloseNow()
	if err := c.Write(t.Context(), websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "pong:ping" {
		t.Errorf("websocket answer %q, %v", b, err)
	}

	// Nothing listens there, and no other test's listener can take it
	// meanwhile: a socket that never listens holds it.
	closedPort, held, err := testport.Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	closed := strconv.Itoa(closedPort)
	for path, want := range map[string]int{
		"/preview/" + closed + "/": http.StatusBadGateway,
		"/preview/3128/":           http.StatusForbidden,
		"/preview/0/":              http.StatusUnprocessableEntity,
		"/preview/65536/":          http.StatusUnprocessableEntity,
		"/preview/080/":            http.StatusUnprocessableEntity,
	} {
		if code, body := get(path); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	// Without the sidecar's token: refused before any dial.
	resp, err := http.Get(base + "/preview/" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
}
