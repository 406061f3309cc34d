package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestOlderSidecarRoute: a route the sandbox's sidecar does not serve
// because it is older than the server (its own "no route" 404, with an
// older protocol stated, or none) is refused with 422 not_supported that
// says so and how to get a sandbox that serves it; the same 404 from a
// sidecar of the server's protocol, and any other 404 of an older one,
// pass on as they came. Before, the client had "no route POST
// /browser/navigate" and no hint.
func TestOlderSidecarRoute(t *testing.T) {
	e := newEnv(t, server.Config{})
	noRoute := func(protocol string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if protocol != "" {
				w.Header().Set(api.HeaderSidecarProtocol, protocol)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"no route `+r.Method+` `+r.URL.Path+`","request_id":"`+r.Header.Get("X-Request-ID")+`"}}`)
		}
	}
	e.Sidecar.Route("POST /browser/navigate", noRoute(""))
	e.Sidecar.Route("POST /pty-exec", noRoute("0"))
	e.Sidecar.Route("POST /browser/close", noRoute(strconv.Itoa(api.SidecarProtocol)))
	e.Sidecar.Route("GET /exec/interactive", noRoute("")) // a WebSocket's upgrade
	e.Sidecar.Route("GET /files/raw", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"File not found: /workspace/x","request_id":"`+r.Header.Get("X-Request-ID")+`"}}`)
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for _, path := range []string{"/browser/navigate", "/pty-exec"} {
		body := `{"url":"http://127.0.0.1:1/"}`
		if path == "/pty-exec" {
			body = `{"command":"top"}`
		}
		resp, b := e.do("POST", sandboxPath(sb.ID, path), e.KeyA, body)
		ae := wantError(t, resp, b, http.StatusUnprocessableEntity, api.CodeNotSupported)
		if !strings.Contains(ae.Message, "older than this server") || !strings.Contains(ae.Message, "POST "+path) ||
			!strings.Contains(ae.Hint, "boxkite session fork "+sb.ID) {
			t.Errorf("%s: %q, hint %q", path, ae.Message, ae.Hint)
		}
	}
	resp, b := e.do("GET", sandboxPath(sb.ID, "/exec/interactive?command=true"), e.KeyA, nil)
	if ae := wantError(t, resp, b, http.StatusUnprocessableEntity, api.CodeNotSupported); !strings.Contains(ae.Message, "GET /exec/interactive") {
		t.Errorf("upgrade refused: %q", ae.Message)
	}
	resp, b = e.do("POST", sandboxPath(sb.ID, "/browser/close"), e.KeyA, nil)
	if ae := wantError(t, resp, b, http.StatusNotFound, api.CodeNotFound); ae.Message != "no route POST /browser/close" {
		t.Errorf("a sidecar of this protocol: %q, want its answer as it came", ae.Message)
	}
	resp, b = e.do("GET", sandboxPath(sb.ID, "/files/raw?path=/workspace/x"), e.KeyA, nil)
	if ae := wantError(t, resp, b, http.StatusNotFound, api.CodeNotFound); ae.Message != "File not found: /workspace/x" {
		t.Errorf("an older sidecar's other 404: %q, want it as it came", ae.Message)
	}
}

// TestAdoptOlderSidecarWarns: a restarted server that adopts a sandbox
// whose sidecar states an older protocol (or none) tells the operator,
// from the health check it makes anyway; one of the server's protocol is
// adopted without a word.
func TestAdoptOlderSidecarWarns(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	e := newEnvWithStore(t, server.Config{}, st)
	older := e.create(e.KeyA, api.CreateSandboxRequest{}) // the fake sidecar states none
	current := e.create(e.KeyA, api.CreateSandboxRequest{})
	cur := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(api.HeaderSidecarProtocol, strconv.Itoa(api.SidecarProtocol))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"healthy"}`)
	}))
	defer cur.Close()
	if _, err := st.UpdateSandbox(t.Context(), current.ID, func(sb *model.Sandbox) error {
		sb.Endpoint = model.Endpoint{Network: "tcp", Address: cur.Listener.Addr().String(), Token: e.Sidecar.Token}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	driver := &fakeDriver{ListFunc: func(context.Context) ([]model.Observed, error) {
		return []model.Observed{{ID: older.ID, Alive: true}, {ID: current.ID, Alive: true}}, nil
	}}
	logs := &lockedbuf.Buffer{}
	srv, err := server.New(server.Config{}, st, driver, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetHealthTimeout(20 * time.Second)
	if err := srv.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "older protocol") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "sandbox="+older.ID) || !strings.Contains(warned[0], "sidecar_protocol=0") {
		t.Errorf("warnings %q, want one for %s (protocol 0) and none for %s", warned, older.ID, current.ID)
	}
}

// TestSandboxSidecarProtocol: GET /v1/sandboxes/{id} says what protocol
// the sandbox's sidecar stated (the fake sidecar states none: 0, an older
// sidecar than the server's), so an operator sees an old sidecar; a
// destroyed sandbox, whose sidecar is gone, and the list say nothing.
func TestSandboxSidecarProtocol(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	// A call through the sidecar: its answer states the protocol.
	if resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "true"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	get := func() (api.Sandbox, string) {
		resp, body := e.do("GET", sandboxPath(sb.ID), e.KeyA, nil)
		var got api.Sandbox
		mustUnmarshal(t, body, &got)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		return got, string(body)
	}
	if got, body := get(); got.SidecarProtocol == nil || *got.SidecarProtocol != 0 {
		t.Errorf("GET %s = %s, want sidecar_protocol 0", sb.ID, body)
	}
	if _, body := e.do("GET", "/v1/sandboxes", e.KeyA, nil); strings.Contains(string(body), "sidecar_protocol") {
		t.Errorf("list = %s, want no sidecar_protocol", body)
	}
	// GET /v1/host says the server's protocol and names the sandbox as
	// one with an older sidecar (boxkite doctor warns of it).
	host := func() api.HostStatus {
		resp, body := e.do("GET", "/v1/host", e.KeyA, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/host: %d %s", resp.StatusCode, body)
		}
		var h api.HostStatus
		mustUnmarshal(t, body, &h)
		return h
	}
	h := host()
	if diff := cmp.Diff([]api.SandboxSidecar{{ID: sb.ID, Label: sb.Label, SidecarProtocol: 0}}, h.OlderSidecars); diff != "" || h.SidecarProtocol != api.SidecarProtocol {
		t.Errorf("GET /v1/host: sidecar_protocol %d (want %d), older_sidecars (-want +got):\n%s", h.SidecarProtocol, api.SidecarProtocol, diff)
	}
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode >= 300 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	if _, body := get(); strings.Contains(body, "sidecar_protocol") {
		t.Errorf("GET of a destroyed sandbox = %s, want no sidecar_protocol", body)
	}
	if h := host(); len(h.OlderSidecars) != 0 {
		t.Errorf("GET /v1/host after the delete: older_sidecars %+v, want none", h.OlderSidecars)
	}
}
