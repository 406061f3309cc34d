package sidecar

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestProtocolHeader: every answer of the sidecar's own, refusals and
// unknown routes included, states the protocol version it speaks
// (api.HeaderSidecarProtocol), so the control plane learns it from the
// health check at a start or an adoption and from any call, with no round
// trip of its own; a preview's answer is the app's and states none.
func TestProtocolHeader(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("app")) }))
	defer app.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(app.URL, "http://"))
	srv, _ := newServer(t, Options{Token: testToken})
	want := strconv.Itoa(api.SidecarProtocol)
	authed := http.Header{api.HeaderSidecarToken: {testToken}}
	for _, c := range []struct {
		method, path string
		header       http.Header
		body         string
		status       int
		want         string
	}{
		{"GET", "/health", nil, "", 200, want},
		{"POST", "/exec", nil, `{"command":"true"}`, 401, want},
		{"POST", "/exec", authed, `{"command":"true"}`, 200, want},
		{"GET", "/files/tree", authed, "", 400, want}, // a route of the full mux
		{"GET", "/no-such-route", authed, "", 404, want},
		{"GET", "/pty", authed, "", 426, want}, // not an upgrade
		{"GET", "/preview/" + port + "/", authed, "", 200, ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = c.header.Clone()
		if req.Header == nil {
			req.Header = http.Header{}
		}
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get(api.HeaderSidecarProtocol); resp.StatusCode != c.status || got != c.want {
			t.Errorf("%s %s: %d with %s %q, want %d with %q", c.method, c.path, resp.StatusCode, api.HeaderSidecarProtocol, got, c.status, c.want)
		}
		if got := api.SidecarProtocolOf(resp.Header); c.want != "" && got != api.SidecarProtocol {
			t.Errorf("%s %s: SidecarProtocolOf = %d, want %d", c.method, c.path, got, api.SidecarProtocol)
		}
	}
}

// TestSidecarProtocolOf: a header that is absent or not a version is an
// older sidecar's (0).
func TestSidecarProtocolOf(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"": 0, "1": 1, "7": 7, "-1": 0, "x": 0, "1.5": 0, " 1": 0} {
		h := http.Header{}
		if v != "" {
			h.Set(api.HeaderSidecarProtocol, v)
		}
		if got := api.SidecarProtocolOf(h); got != want {
			t.Errorf("SidecarProtocolOf(%q) = %d, want %d", v, got, want)
		}
	}
}
