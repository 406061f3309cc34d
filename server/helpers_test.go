package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// fakeDriver is a model.Driver whose behaviour is set per test. By
// default Create hands out the fake sidecar's endpoint.
type fakeDriver struct {
	CreateFunc func(ctx context.Context, spec model.Spec) (model.Endpoint, error)
	DeleteFunc func(ctx context.Context, id string) error
	ListFunc   func(ctx context.Context) ([]model.Observed, error)

	mu      sync.Mutex
	created []model.Spec
	deleted []string
	pauses  []string // pause_fake_test.go
	// calls logs pause, resume and delete in order; ResumeDelay is how
	// long a resume takes (pause_fake_test.go).
	calls       []string
	ResumeDelay time.Duration
	ResumeErr   error // what Resume returns (pause_fake_test.go)
	// ResumeHook, when set, runs in Resume before it returns ResumeErr;
	// PauseHook in Pause before it returns.
	ResumeHook func(id string)
	PauseHook  func(id string)
}

var _ model.Driver = (*fakeDriver)(nil)

func (d *fakeDriver) Create(ctx context.Context, spec model.Spec) (model.Endpoint, error) {
	d.mu.Lock()
	d.created = append(d.created, spec)
	d.mu.Unlock()
	return d.CreateFunc(ctx, spec)
}

func (d *fakeDriver) Delete(ctx context.Context, id string) error {
	d.mu.Lock()
	d.deleted = append(d.deleted, id)
	d.calls = append(d.calls, "delete "+id)
	d.mu.Unlock()
	if d.DeleteFunc != nil {
		return d.DeleteFunc(ctx, id)
	}
	return nil
}

func (d *fakeDriver) List(ctx context.Context) ([]model.Observed, error) {
	if d.ListFunc != nil {
		return d.ListFunc(ctx)
	}
	return nil, nil
}

func (d *fakeDriver) Deleted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.deleted...)
}

func (d *fakeDriver) Created() []model.Spec {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]model.Spec(nil), d.created...)
}

// fakeSidecar serves /health and /exec over TCP like a real sidecar. By
// default /exec answers with the command echoed on stdout; ExecFunc
// overrides that.
type fakeSidecar struct {
	*httptest.Server
	Token    string
	ExecFunc func(w http.ResponseWriter, r *http.Request, req api.ExecRequest)

	mux      *http.ServeMux
	mu       sync.Mutex
	requests []api.ExecRequest
	headers  []http.Header
}

// execAnswer is an ExecFunc answering every exec with res, as a sidecar
// answers a JSON exec: the whole body at once, its Content-Length set.
func execAnswer(tb testing.TB, res api.ExecResult) func(http.ResponseWriter, *http.Request, api.ExecRequest) {
	tb.Helper()
	answer, err := json.Marshal(res)
	if err != nil {
		tb.Fatal(err)
	}
	return func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		_, _ = w.Write(answer)
	}
}

// Route adds a handler to the fake sidecar.
func (sc *fakeSidecar) Route(pattern string, h http.HandlerFunc) { sc.mux.HandleFunc(pattern, h) }

func newFakeSidecar(t testing.TB) *fakeSidecar {
	mux := http.NewServeMux()
	sc := &fakeSidecar{Token: "sidecar-token", mux: mux}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"healthy"}`)
	})
	mux.HandleFunc("POST /exec", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderSidecarToken) != sc.Token {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"sidecar_auth","message":"bad token"}}`)
			return
		}
		var req api.ExecRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sc.mu.Lock()
		sc.requests = append(sc.requests, req)
		sc.headers = append(sc.headers, r.Header.Clone())
		sc.mu.Unlock()
		if sc.ExecFunc != nil {
			sc.ExecFunc(w, r, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 0, Stdout: req.Command + "\n", DurationMS: 1})
	})
	sc.Server = httptest.NewServer(mux)
	t.Cleanup(sc.Close)
	return sc
}

func (sc *fakeSidecar) Endpoint() model.Endpoint {
	return model.Endpoint{Network: "tcp", Address: sc.Listener.Addr().String(), Token: sc.Token}
}

func (sc *fakeSidecar) Requests() ([]api.ExecRequest, []http.Header) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return append([]api.ExecRequest(nil), sc.requests...), append([]http.Header(nil), sc.headers...)
}

// env is a control plane on httptest with real SQLite, a fake driver and a
// fake sidecar, and two accounts: A (key KeyA) and B (key KeyB).
type env struct {
	t       testing.TB
	Server  *server.Server
	Store   model.Store
	Driver  *fakeDriver
	Sidecar *fakeSidecar
	URL     string
	KeyA    string
	KeyB    string
	AcctA   *model.Account
	Logs    *lockedbuf.Buffer
	clock   *clock
}

// clock is a settable time source; it starts at the real time so that
// what the server writes looks plausible. Its timers (the server's by its
// clock: a key's expiry) are real ones until holdTimers; then they fire
// when Advance reaches their time.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	held   bool
	timers map[*clockTimer]struct{}
}

type clockTimer struct {
	at time.Time
	f  func()
}

// holdTimers makes the timers set from now on fire in Advance, by the
// clock, instead of after real time.
func (c *clock) holdTimers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = true
}

// AfterFunc is the server's timer (Server.SetAfterFunc).
func (c *clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held || d <= 0 {
		return time.AfterFunc(d, f).Stop
	}
	if c.timers == nil {
		c.timers = map[*clockTimer]struct{}{}
	}
	t := &clockTimer{at: c.now.Add(d), f: f}
	c.timers[t] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, pending := c.timers[t]
		delete(c.timers, t)
		return pending
	}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d and fires the held timers it reaches.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*clockTimer
	for t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

func openStore(t testing.TB, dir string) model.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(dir, "boxkite.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnv(t testing.TB, cfg server.Config) *env {
	t.Helper()
	return newEnvWithStore(t, cfg, openStore(t, t.TempDir()))
}

func newEnvWithStore(t testing.TB, cfg server.Config, st model.Store) *env {
	t.Helper()
	return newEnvWithDriver(t, cfg, st, nil)
}

// newEnvWithDriver is newEnvWithStore whose server runs on wrap(the fake
// driver) (nil: the fake driver itself), for a driver with optional
// capabilities.
func newEnvWithDriver(t testing.TB, cfg server.Config, st model.Store, wrap func(*fakeDriver) model.Driver) *env {
	t.Helper()
	e := &env{
		t: t, Store: st, Sidecar: newFakeSidecar(t), Logs: &lockedbuf.Buffer{},
		clock: &clock{now: time.Now().UTC().Truncate(time.Microsecond)},
	}
	e.Driver = &fakeDriver{CreateFunc: func(context.Context, model.Spec) (model.Endpoint, error) {
		return e.Sidecar.Endpoint(), nil
	}}
	cfg.DriverName = "fake"
	log := slog.New(slog.NewTextHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var d model.Driver = e.Driver
	if wrap != nil {
		d = wrap(e.Driver)
	}
	srv, err := server.New(cfg, st, d, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	srv.SetNow(e.clock.Now)
	srv.SetAfterFunc(e.clock.AfterFunc)
	e.Server = srv
	e.AcctA, e.KeyA = e.addAccount("a@example.com", model.RoleAdmin)
	_, e.KeyB = e.addAccount("b@example.com", model.RoleAdmin)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.URL = hs.URL
	return e
}

func (e *env) addAccount(email, role string) (*model.Account, string) {
	e.t.Helper()
	a := &model.Account{ID: model.NewID(), Email: email, CreatedAt: time.Now()}
	if err := e.Store.CreateAccount(context.Background(), a); err != nil {
		e.t.Fatalf("CreateAccount: %v", err)
	}
	return a, e.addKey(a, role)
}

func (e *env) addKey(a *model.Account, role string) string {
	e.t.Helper()
	key := model.NewAPIKey()
	if err := e.Store.CreateAPIKey(context.Background(), &model.APIKey{
		ID: model.NewID(), AccountID: a.ID,
		Hash: model.HashAPIKey(key), Prefix: key[:17], Role: role, CreatedAt: time.Now(),
	}); err != nil {
		e.t.Fatalf("CreateAPIKey: %v", err)
	}
	return key
}

// do sends a request with the key (if any) and a JSON body (a string is
// sent verbatim) and returns the response with its body read.
func (e *env) do(method, path, key string, body any, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, b
}

// create makes one sandbox for key and returns it.
func (e *env) create(key string, req api.CreateSandboxRequest) api.Sandbox {
	e.t.Helper()
	resp, body := e.do("POST", "/v1/sandboxes", key, req)
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create sandbox: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustUnmarshal(e.t, body, &sb)
	return sb
}

func mustUnmarshal(t testing.TB, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

// apiError decodes an error envelope; it fails the test if body is not one.
func apiError(t testing.TB, body []byte) *api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("body is not an error envelope: %s", body)
	}
	return env.Error
}

// wantError checks status, code and that the envelope carries the
// response's request id.
func wantError(t testing.TB, resp *http.Response, body []byte, status int, code string) *api.Error {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, status, body)
	}
	e := apiError(t, body)
	if e.Code != code {
		t.Errorf("code = %q, want %q (body %s)", e.Code, code, body)
	}
	if id := resp.Header.Get("X-Request-ID"); id == "" || e.RequestID != id {
		t.Errorf("request_id = %q, X-Request-ID = %q; want equal and non-empty", e.RequestID, id)
	}
	return e
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func sandboxPath(id string, rest ...string) string {
	return fmt.Sprintf("/v1/sandboxes/%s%s", id, strings.Join(rest, ""))
}

// httptestServer serves h on a loopback httptest server and returns its URL.
func httptestServer(t testing.TB, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
