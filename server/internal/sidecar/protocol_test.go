package sidecar

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestClientsProtocol: a sandbox's client records the protocol version
// each answer of its sidecar states, small requests (leanTransport) and
// uploads (net/http's Transport) alike; before an answer nothing is known,
// and an answer that states none is an older sidecar's (0).
func TestClientsProtocol(t *testing.T) {
	t.Parallel()
	var state atomic.Value // the string the fake sidecar states
	state.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if v := state.Load().(string); v != "" {
			w.Header().Set(api.HeaderSidecarProtocol, v)
		}
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	c := NewClients()
	ep := model.Endpoint{Network: "tcp", Address: strings.TrimPrefix(srv.URL, "http://"), Token: "t"}
	if v, ok := c.Protocol("sb"); ok || v != 0 {
		t.Fatalf("Protocol before a client = %d, %v; want 0, false", v, ok)
	}
	cl, err := c.Client("sb", ep)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Protocol("sb"); ok || v != 0 {
		t.Fatalf("Protocol before an answer = %d, %v; want 0, false", v, ok)
	}
	do := func(body io.Reader) {
		t.Helper()
		req, err := NewRequest(t.Context(), http.MethodPost, "/x", nil, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, c2 := range []struct {
		state string
		body  io.Reader
		want  int
	}{
		{"", nil, 0},
		{"1", nil, 1},
		{"", strings.NewReader("x"), 0},
		{"3", io.MultiReader(strings.NewReader(strings.Repeat("x", LeanMaxBody+1))), 3}, // unknown length: the Transport
		{"junk", nil, 0},
	} {
		state.Store(c2.state)
		do(c2.body)
		if v, ok := c.Protocol("sb"); !ok || v != c2.want {
			t.Errorf("after an answer stating %q: Protocol = %d, %v; want %d, true", c2.state, v, ok, c2.want)
		}
	}
	c.Forget("sb")
	if _, ok := c.Protocol("sb"); ok {
		t.Error("Protocol after Forget: still known")
	}
}
