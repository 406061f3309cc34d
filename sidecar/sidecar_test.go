package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
)

const testToken = "test-token"

// newServer serves a Handler for opts on loopback until the test ends
// (serve). An empty Workspace becomes a fresh temp dir; Log goes to the
// test's output.
func newServer(t testing.TB, opts Options) (srv *httptest.Server, workspace string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return serve(t, New(opts)), opts.Workspace
}

// serve serves h on loopback until the test ends. The cleanup ends what h
// keeps running (Close), closes the server, cuts the connections it handed
// over (WebSockets), which httptest.Server.Close neither closes nor waits
// for, and waits until every request has returned: a request logs as it
// returns, to the test's output, which must not be written to once the
// test has ended (a data race, or a panic in the handler).
func serve(t testing.TB, h *Handler) *httptest.Server {
	t.Helper()
	var (
		requests sync.WaitGroup
		mu       sync.Mutex
		hijacked []net.Conn
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		defer requests.Done()
		h.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			mu.Lock()
			hijacked = append(hijacked, c)
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close() // no request starts after this
		mu.Lock()
		for _, c := range hijacked {
			_ = c.Close()
		}
		mu.Unlock()
		requests.Wait()
	})
	return srv
}

// call sends one request and returns the status and body.
func call(t testing.TB, method, url string, header http.Header, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, b
}

// decodeError returns the envelope's error, failing the test if there is none.
func decodeError(t testing.TB, body []byte) *api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("body %q is not an error envelope (err %v)", body, err)
	}
	return env.Error
}

func TestHealthNeedsNoToken(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, Options{Version: "v1.2.3"}) // no token configured at all
	status, body := call(t, http.MethodGet, srv.URL+"/health", nil, "")
	if status != http.StatusOK {
		t.Fatalf("GET /health = %d %s, want 200", status, body)
	}
	var got api.Health
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	if diff := cmp.Diff(api.Health{Status: "healthy", Version: "v1.2.3"}, got); diff != "" {
		t.Errorf("GET /health (-want +got):\n%s", diff)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	configured, _ := newServer(t, Options{Token: testToken})
	unconfigured, _ := newServer(t, Options{})
	tests := []struct {
		name       string
		srv        *httptest.Server
		method     string
		path       string
		token      string // "" sends no header
		wantStatus int
		wantCode   string // "" means success
	}{
		{"no token configured", unconfigured, "POST", "/exec", testToken, 503, api.CodeSidecarNotReady},
		{"no token configured, no header", unconfigured, "POST", "/exec", "", 503, api.CodeSidecarNotReady},
		{"missing header", configured, "POST", "/exec", "", 401, api.CodeUnauthorized},
		{"wrong token", configured, "POST", "/exec", "test-tokeN", 401, api.CodeUnauthorized},
		{"token prefix", configured, "POST", "/exec", "test", 401, api.CodeUnauthorized},
		{"right token", configured, "POST", "/exec", testToken, 200, ""},
		{"unknown route without token", configured, "GET", "/nope", "", 401, api.CodeUnauthorized},
		{"unknown route", configured, "GET", "/nope", testToken, 404, api.CodeNotFound},
		// /health needs no token, but one presented must be the
		// sidecar's (a restart checks a row's token so; claim.go).
		{"health without token", configured, "GET", "/health", "", 200, ""},
		{"health with right token", configured, "GET", "/health", testToken, 200, ""},
		{"health with wrong token", configured, "GET", "/health", "wrong", 401, api.CodeUnauthorized},
		{"health, no token configured", unconfigured, "GET", "/health", "", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{"X-Request-Id": {"req-1"}}
			if tt.token != "" {
				h.Set(api.HeaderSidecarToken, tt.token)
			}
			status, body := call(t, tt.method, tt.srv.URL+tt.path, h, `{"command":"true"}`)
			if status != tt.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, status, body, tt.wantStatus)
			}
			if tt.wantCode == "" {
				return
			}
			e := decodeError(t, body)
			if e.Code != tt.wantCode || e.RequestID != "req-1" {
				t.Errorf("error = %+v, want code %q and request_id req-1", e, tt.wantCode)
			}
		})
	}
}

func TestStatusWriterKeepsFirstStatus(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	sw := &statusWriter{ResponseWriter: rec}
	if got := sw.status(); got != 200 {
		t.Errorf("status before writing = %d, want 200", got)
	}
	sw.WriteHeader(http.StatusTeapot)
	_, _ = sw.Write([]byte("x"))
	if got := sw.status(); got != http.StatusTeapot {
		t.Errorf("status = %d, want %d", got, http.StatusTeapot)
	}
}

// needRoot skips a test that needs root (mounts, switching ids) outside
// CI, and fails it in CI, which runs as root: there it must run.
func needRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s needs root, and CI runs as root", why)
	}
	t.Skip(why + " needs root; CI runs as root")
}

// TestServeEndsHijackedRequests: a test's server ends every request
// before the test ends, a WebSocket the test never closed too: a request
// logs to the test's output as it returns, and a write to it once the
// test has ended is a data race.
func TestServeEndsHijackedRequests(t *testing.T) {
	t.Parallel()
	var log lockedbuf.Buffer
	t.Cleanup(func() { // after serve's: cleanups run last registered first
		if got := log.String(); !strings.Contains(got, "msg=request method=GET path=/pty") {
			t.Errorf("the /pty request had not returned when its test ended; log:\n%s", got)
		}
	})
	url, _ := newToolServer(t, Options{Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	conn, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(url, "http")+"/pty",
		&websocket.DialOptions{HTTPHeader: authed})
	if err != nil {
		t.Fatalf("dial /pty: %v", err)
	}
	_ = conn // left open, as a test that fails half-way leaves it
}
