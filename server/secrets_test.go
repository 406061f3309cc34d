package server_test

import (
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
)

// fakeResolver answers every name with 93.184.216.34 (never dialled:
// tests send requests to 127.0.0.1 only), except those it maps.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		if len(a) == 0 {
			return nil, fmt.Errorf("lookup %s: no such host", host)
		}
		return a, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// testHostAddr is the public address the tests' secrets service takes
// for its host's own.
const testHostAddr = "93.184.216.99"

// testSecrets is a secrets service over st with a fresh key, a fake
// resolver and loopback permitted (the test's own HTTP servers).
func testSecrets(t testing.TB, st model.Store) *secrets.Service {
	t.Helper()
	kr, err := secrets.ParseKeyring(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return secrets.New(st.(secrets.Store), secrets.Config{
		Keyring: kr, PermitForTests: server.EgressPermitLoopbackForTests,
		DialForTests: tlsFrontDial, RootCAsForTests: tlsFrontRoots(),
		Resolver: fakeResolver{
			"private.example.com": {netip.MustParseAddr("10.1.2.3")}, "nowhere.example.com": nil,
			"self.example.com": {netip.MustParseAddr(testHostAddr)},
		},
		LocalAddrs: func() ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr(testHostAddr)}, nil
		},
	})
}

func newSecretsEnv(t *testing.T) (*env, string) {
	t.Helper()
	dir := t.TempDir()
	st := openStore(t, dir)
	return newEnvWithStore(t, server.Config{Secrets: testSecrets(t, st)}, st), dir
}

func createSecret(t *testing.T, e *env, key string, req api.CreateSecretRequest) api.Secret {
	t.Helper()
	resp, body := e.do("POST", "/v1/secrets", key, req)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create secret: %d %s", resp.StatusCode, body)
	}
	var s api.Secret
	mustUnmarshal(t, body, &s)
	return s
}

// TestSecretsAPI: create, list, update and delete, each refusal with its
// stable code, and the value never in an answer.
func TestSecretsAPI(t *testing.T) {
	t.Parallel()
	e, _ := newSecretsEnv(t)
	const value = "sk-live-value-0123456789"
	s := createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "GH_TOKEN", Value: value, AllowedHosts: []string{"API.Example.com."}, TrustTier: "testnet"})
	if s.Name != "GH_TOKEN" || len(s.AllowedHosts) != 1 || s.AllowedHosts[0] != "api.example.com" || s.TrustTier == nil || s.LastUsedAt != nil {
		t.Errorf("created %+v", s)
	}
	tests := []struct {
		name   string
		req    api.CreateSecretRequest
		status int
		code   string
	}{
		{"taken", api.CreateSecretRequest{Name: "GH_TOKEN", Value: "x", AllowedHosts: []string{"a.example.com"}}, 409, api.CodeSecretNameTaken},
		{"bad name", api.CreateSecretRequest{Name: "a b", Value: "x", AllowedHosts: []string{"a.example.com"}}, 422, api.CodeValidation},
		{"name .", api.CreateSecretRequest{Name: ".", Value: "x", AllowedHosts: []string{"a.example.com"}}, 422, api.CodeValidation},
		{"name ..", api.CreateSecretRequest{Name: "..", Value: "x", AllowedHosts: []string{"a.example.com"}}, 422, api.CodeValidation},
		{"no value", api.CreateSecretRequest{Name: "n", AllowedHosts: []string{"a.example.com"}}, 422, api.CodeValidation},
		{"no hosts", api.CreateSecretRequest{Name: "n", Value: "x"}, 422, api.CodeInvalidAllowedHost},
		{"url host", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"https://a.example.com/"}}, 422, api.CodeInvalidAllowedHost},
		{"wildcard", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"*.example.com"}}, 422, api.CodeInvalidAllowedHost},
		{"unresolvable", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"nowhere.example.com"}}, 422, api.CodeInvalidAllowedHost},
		{"private", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"private.example.com"}}, 422, api.CodeUnsafeAllowedHost},
		{"metadata", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"169.254.169.254"}}, 422, api.CodeUnsafeAllowedHost},
		// The server's host by its public address, or a name resolving to
		// it: from the host, it reaches what the host binds to every address.
		{"this host", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{testHostAddr}}, 422, api.CodeUnsafeAllowedHost},
		{"this host by name", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"self.example.com"}}, 422, api.CodeUnsafeAllowedHost},
		{"mainnet", api.CreateSecretRequest{Name: "n", Value: "x", AllowedHosts: []string{"a.example.com"}, TrustTier: "mainnet"}, 422, api.CodeUnsupportedTrustTier},
	}
	for _, tt := range tests {
		resp, body := e.do("POST", "/v1/secrets", e.KeyA, tt.req)
		if ae := wantError(t, resp, body, tt.status, tt.code); ae.Hint == "" {
			t.Errorf("%s: no hint: %s", tt.name, body)
		}
	}

	// A member key uses secrets but does not write them.
	member := e.addKey(e.AcctA, model.RoleMember)
	resp, body := e.do("POST", "/v1/secrets", member, api.CreateSecretRequest{Name: "m", Value: "x", AllowedHosts: []string{"a.example.com"}})
	wantError(t, resp, body, 403, api.CodeForbidden)
	if resp, body := e.do("GET", "/v1/secrets", member, nil); resp.StatusCode != 200 || !strings.Contains(string(body), s.ID) {
		t.Errorf("member list: %d %s", resp.StatusCode, body)
	}

	// Update by name, then by id; the answer has no value either.
	resp, body = e.do("PUT", "/v1/secrets/GH_TOKEN", e.KeyA, api.UpdateSecretRequest{Value: "second-value", AllowedHosts: []string{"b.example.com"}})
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"b.example.com"`) {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("PUT", "/v1/secrets/"+s.ID, e.KeyA, api.UpdateSecretRequest{})
	wantError(t, resp, body, 422, api.CodeValidation)
	resp, body = e.do("GET", "/v1/secrets", e.KeyA, nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), value) || strings.Contains(string(body), "second-value") {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("DELETE", "/v1/secrets/"+s.ID, e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("DELETE", "/v1/secrets/"+s.ID, e.KeyA, nil)
	wantError(t, resp, body, 404, api.CodeNotFound)

	// 50 per account.
	for i := range api.MaxSecretsPerAccount {
		createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: fmt.Sprintf("s%d", i), Value: "v", AllowedHosts: []string{"a.example.com"}})
	}
	resp, body = e.do("POST", "/v1/secrets", e.KeyA, api.CreateSecretRequest{Name: "one-too-many", Value: "v", AllowedHosts: []string{"a.example.com"}})
	wantError(t, resp, body, 429, api.CodeSecretLimitReached)
	createSecret(t, e, e.KeyB, api.CreateSecretRequest{Name: "s0", Value: "v", AllowedHosts: []string{"a.example.com"}})
}

// TestSecretsUnavailable: without a secrets key the routes say so, and a
// create naming secrets is refused before any sandbox exists.
func TestSecretsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	resp, body := e.do("GET", "/v1/secrets", e.KeyA, nil)
	wantError(t, resp, body, 503, api.CodeSecretsUnavailable)
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"X"}})
	wantError(t, resp, body, 503, api.CodeSecretsUnavailable)
	if n := len(e.Driver.Created()); n != 0 {
		t.Errorf("%d sandboxes created", n)
	}
}

// The tests' HTTPS "remote host": one TLS server on 127.0.0.1, which the
// tests' secrets services reach for 127.0.0.1:443 (tlsFrontDial) and
// trust (tlsFrontRoots), since a request that carries a secret goes to
// https on port 443 only. Each upstream is a path prefix of it, so the
// URLs the tests send are https://127.0.0.1/up-N/….
var tlsFront struct {
	once   sync.Once
	srv    *httptest.Server
	mu     sync.Mutex
	n      int
	routes map[string]http.Handler
}

func startTLSFront() {
	tlsFront.once.Do(func() {
		tlsFront.routes = map[string]http.Handler{}
		tlsFront.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			prefix, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			tlsFront.mu.Lock()
			h := tlsFront.routes[prefix]
			tlsFront.mu.Unlock()
			if h == nil {
				http.NotFound(w, r)
				return
			}
			http.StripPrefix("/"+prefix, h).ServeHTTP(w, r)
		}))
	})
}

// tlsFrontDial dials the TLS front for 127.0.0.1:443, another loopback
// address as it is, and refuses the rest: no test reaches another host.
func tlsFrontDial(ctx context.Context, network, addr string) (net.Conn, error) {
	startTLSFront()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("the tests' broker dials loopback only, not %s", addr)
	}
	if addr == "127.0.0.1:443" {
		addr = tlsFront.srv.Listener.Addr().String()
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// tlsFrontRoots trusts the TLS front's certificate (for 127.0.0.1).
func tlsFrontRoots() *x509.CertPool {
	startTLSFront()
	pool := x509.NewCertPool()
	pool.AddCert(tlsFront.srv.Certificate())
	return pool
}

// upstream is a path prefix of the TLS front that h serves, until the
// test ends; its URL is https://127.0.0.1/up-N.
type upstream struct{ URL string }

func newUpstream(t *testing.T, h http.Handler) upstream {
	startTLSFront()
	tlsFront.mu.Lock()
	tlsFront.n++
	prefix := fmt.Sprintf("up-%d", tlsFront.n)
	tlsFront.routes[prefix] = h
	tlsFront.mu.Unlock()
	t.Cleanup(func() {
		tlsFront.mu.Lock()
		delete(tlsFront.routes, prefix)
		tlsFront.mu.Unlock()
	})
	return upstream{URL: "https://127.0.0.1/" + prefix}
}

// echoServer records the requests it gets and echoes their headers.
type echoServer struct {
	upstream
	mu   sync.Mutex
	seen []*http.Request
}

func newEchoServer(t *testing.T) *echoServer {
	es := &echoServer{}
	es.upstream = newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		es.mu.Lock()
		es.seen = append(es.seen, r.Clone(context.Background()))
		es.mu.Unlock()
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "auth=%s query=%s", r.Header.Get("Authorization"), r.URL.RawQuery)
	}))
	return es
}

func (es *echoServer) requests() []*http.Request {
	es.mu.Lock()
	defer es.mu.Unlock()
	return append([]*http.Request(nil), es.seen...)
}

// TestHTTPRequestBroker (issue 23, acceptance 1, the API side; the
// sandbox side is TestSecretNeverInSandbox): the value reaches the
// destination, and nothing the caller, the audit log, the server log,
// the metrics or the database file hold has it.
func TestHTTPRequestBroker(t *testing.T) {
	t.Parallel()
	e, dir := newSecretsEnv(t)
	up := newEchoServer(t)
	const value = "tok_9f8e7d6c5b4a39281706"
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "API_TOKEN", Value: value, AllowedHosts: []string{"127.0.0.1"}})
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "OTHER", Value: "other-value-1234", AllowedHosts: []string{"a.example.com"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"API_TOKEN"}})
	plain := e.create(e.KeyA, api.CreateSandboxRequest{})

	call := func(id string, req api.HTTPRequest) (*http.Response, []byte) {
		return e.do("POST", sandboxPath(id, "/http-request"), e.KeyA, req)
	}
	resp, body := call(sb.ID, api.HTTPRequest{
		URL:     up.URL + "/v1/thing?key={{secret:API_TOKEN}}",
		Headers: map[string]string{"Authorization": "Bearer {{secret:API_TOKEN}}"},
	})
	if resp.StatusCode != 200 {
		t.Fatalf("http-request: %d %s", resp.StatusCode, body)
	}
	var got api.HTTPResponse
	mustUnmarshal(t, body, &got)
	if got.StatusCode != 200 || got.Body != "auth=Bearer [REDACTED_SECRET:API_TOKEN] query=key=[REDACTED_SECRET:API_TOKEN]" ||
		got.Headers["X-Echo"] != "Bearer [REDACTED_SECRET:API_TOKEN]" || len(got.SecretsUsed) != 1 {
		t.Errorf("answer: %s", body)
	}
	reqs := up.requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+value || reqs[0].URL.Query().Get("key") != value {
		t.Fatalf("the destination did not get the value: %+v", reqs)
	}

	// Refusals, each with its stable code, none reaching the destination.
	refusals := []struct {
		name   string
		id     string
		req    api.HTTPRequest
		status int
		code   string
	}{
		{"not granted", sb.ID, api.HTTPRequest{URL: up.URL, Headers: map[string]string{"X": "{{secret:OTHER}}"}}, 404, api.CodeSecretNotReferenced},
		{"no such secret", sb.ID, api.HTTPRequest{URL: up.URL, Body: "{{secret:NOPE}}"}, 404, api.CodeSecretNotReferenced},
		{"host not allowed", sb.ID, api.HTTPRequest{URL: "https://b.example.com/?k={{secret:API_TOKEN}}"}, 403, api.CodeDestinationNotAllowed},
		{"no secrets in sandbox", plain.ID, api.HTTPRequest{URL: up.URL}, 403, api.CodeDestinationNotAllowed},
		{"secret in host", sb.ID, api.HTTPRequest{URL: "http://{{secret:API_TOKEN}}.example.com/"}, 422, api.CodeValidation},
		{"not http", sb.ID, api.HTTPRequest{URL: "file:///etc/passwd"}, 422, api.CodeValidation},
		{"timeout", sb.ID, api.HTTPRequest{URL: up.URL, Timeout: 61}, 422, api.CodeValidation},
	}
	for _, tt := range refusals {
		resp, body := call(tt.id, tt.req)
		wantError(t, resp, body, tt.status, tt.code)
		if strings.Contains(string(body), value) {
			t.Errorf("%s: refusal has the value: %s", tt.name, body)
		}
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("refused requests reached the destination: %d requests", n)
	}
	// Without a secret, to an allowed host of the sandbox's secrets; no redirect is followed.
	resp, body = call(sb.ID, api.HTTPRequest{URL: up.URL + "/redirect"})
	mustUnmarshal(t, body, &got)
	if resp.StatusCode != 200 || got.StatusCode != http.StatusFound {
		t.Errorf("redirect: %d %s", resp.StatusCode, body)
	}

	// The audit log names the secret, never its value.
	_, logBody := e.do("GET", sandboxPath(sb.ID, "/log"), e.KeyA, nil)
	if !strings.Contains(string(logBody), `"operation":"http_request"`) || !strings.Contains(string(logBody), `"secrets":["API_TOKEN"]`) {
		t.Errorf("audit log lacks the use: %s", logBody)
	}
	_, metrics := e.do("GET", "/metrics", "", nil)
	_, list := e.do("GET", "/v1/secrets", e.KeyA, nil)
	if !strings.Contains(string(list), `"last_used_at":"`) {
		t.Errorf("last_used_at not set: %s", list)
	}
	for what, text := range map[string]string{"audit log": string(logBody), "server log": e.Logs.String(), "metrics": string(metrics), "list": string(list)} {
		if strings.Contains(text, value) {
			t.Errorf("the %s has the value", what)
		}
	}
	if err := e.Store.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "boxkite.db*"))
	if len(files) == 0 {
		t.Fatal("no database file")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), value) || strings.Contains(string(b), "other-value-1234") {
			t.Errorf("%s holds a secret's value", f)
		}
	}
}

// TestSecretRequiresHTTPS: a request that carries a secret (in the URL,
// a header or the body) goes to https on port 443 only, written or
// implied; to plain http or another port it is refused with
// secret_requires_https before anything leaves the server. A request
// without a secret keeps its rules: to an allowed host, any port.
func TestSecretRequiresHTTPS(t *testing.T) {
	t.Parallel()
	e, _ := newSecretsEnv(t)
	up := newEchoServer(t)
	plain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain auth=%q", r.Header.Get("Authorization"))
	}))
	var plainHits atomic.Int32
	plain.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			plainHits.Add(1)
		}
	}
	plain.Start()
	t.Cleanup(plain.Close)
	const value = "https-only-value-31337"
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "TOK", Value: value, AllowedHosts: []string{"127.0.0.1", "::1"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"TOK"}})
	call := func(req api.HTTPRequest) (*http.Response, []byte) {
		return e.do("POST", sandboxPath(sb.ID, "/http-request"), e.KeyA, req)
	}
	inHeader := map[string]string{"Authorization": "Bearer {{secret:TOK}}"}
	refused := []struct {
		name, msg string
		req       api.HTTPRequest
	}{
		{"http on the server's port, in a header", "http on port " + plain.URL[strings.LastIndex(plain.URL, ":")+1:], api.HTTPRequest{URL: plain.URL + "/x", Headers: inHeader}},
		{"http, port implied, in the query", "http on port 80", api.HTTPRequest{URL: "http://127.0.0.1/?k={{secret:TOK}}"}},
		{"http on 443, in the body", "http on port 443", api.HTTPRequest{Method: "POST", URL: "http://127.0.0.1:443/", Body: "{{secret:TOK}}"}},
		{"https on another port", "https on port 8443", api.HTTPRequest{URL: "https://127.0.0.1:8443/", Headers: inHeader}},
		{"https on the server's port", "https on port " + plain.URL[strings.LastIndex(plain.URL, ":")+1:], api.HTTPRequest{URL: "https" + strings.TrimPrefix(plain.URL, "http") + "/", Headers: inHeader}},
		{"IPv6 http", "http on port 80", api.HTTPRequest{URL: "http://[::1]/", Headers: inHeader}},
	}
	for _, tt := range refused {
		resp, body := call(tt.req)
		wantError(t, resp, body, http.StatusForbidden, api.CodeSecretRequiresHTTPS)
		var env struct {
			Error api.Error `json:"error"`
		}
		mustUnmarshal(t, body, &env)
		if !strings.Contains(env.Error.Message, tt.msg) || !strings.Contains(env.Error.Hint, "https://") || strings.Contains(string(body), value) {
			t.Errorf("%s: message %q, hint %q; want the message to name %q and the hint an https URL", tt.name, env.Error.Message, env.Error.Hint, tt.msg)
		}
	}
	if n := plainHits.Load(); n != 0 || len(up.requests()) != 0 {
		t.Fatalf("refused requests left the server: %d connections to the plain server, %d requests to the TLS one", n, len(up.requests()))
	}

	// https on port 443, implied or written: sent.
	for _, u := range []string{up.URL + "/implied?k={{secret:TOK}}", strings.Replace(up.URL, "127.0.0.1", "127.0.0.1:443", 1) + "/explicit", "HTTPS://127.0.0.1/" + strings.TrimPrefix(up.URL, "https://127.0.0.1/") + "/upper"} {
		resp, body := call(api.HTTPRequest{URL: u, Headers: inHeader})
		var got api.HTTPResponse
		mustUnmarshal(t, body, &got)
		if resp.StatusCode != 200 || got.StatusCode != 200 {
			t.Errorf("%s: %d %s", u, resp.StatusCode, body)
		}
	}
	if reqs := up.requests(); len(reqs) != 3 || reqs[0].Header.Get("Authorization") != "Bearer "+value {
		t.Errorf("the https destination got %d requests: %v", len(reqs), reqs)
	}

	// Without a secret: today's rules, plain http to any port of an allowed host.
	resp, body := call(api.HTTPRequest{URL: plain.URL + "/open"})
	var got api.HTTPResponse
	mustUnmarshal(t, body, &got)
	if resp.StatusCode != 200 || got.Body != `plain auth=""` {
		t.Errorf("a request without a secret over http: %d %s", resp.StatusCode, body)
	}
}

// TestSecretRecreatedNotRegranted: a secret deleted and created again
// under its name is a new secret: the sandboxes made with the old one
// cannot use it (404 as after the delete), those made after can.
func TestSecretRecreatedNotRegranted(t *testing.T) {
	t.Parallel()
	e, _ := newSecretsEnv(t)
	up := newEchoServer(t)
	s := createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "S1", Value: "old-value-0123456789", AllowedHosts: []string{"127.0.0.1"}})
	old := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"S1"}})
	use := func(id string) (*http.Response, []byte) {
		return e.do("POST", sandboxPath(id, "/http-request"), e.KeyA, api.HTTPRequest{URL: up.URL + "/?k={{secret:S1}}"})
	}
	if resp, body := use(old.ID); resp.StatusCode != 200 {
		t.Fatalf("before the delete: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("DELETE", "/v1/secrets/"+s.ID, e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body := use(old.ID)
	wantError(t, resp, body, 404, api.CodeSecretNotReferenced)
	const value = "new-value-9876543210"
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "S1", Value: value, AllowedHosts: []string{"127.0.0.1"}})
	resp, body = use(old.ID)
	wantError(t, resp, body, 404, api.CodeSecretNotReferenced)
	if n := len(up.requests()); n != 1 {
		t.Errorf("the old sandbox's requests reached the destination: %d requests, want 1", n)
	}
	fresh := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"S1"}})
	if resp, body := use(fresh.ID); resp.StatusCode != 200 {
		t.Fatalf("a sandbox made after: %d %s", resp.StatusCode, body)
	}
	if reqs := up.requests(); len(reqs) != 2 || reqs[1].URL.Query().Get("k") != value {
		t.Errorf("a sandbox made after did not send the new value: %+v", reqs)
	}
}

// TestMCPHTTPRequest: the hosted /mcp/ offers http_request only when
// ?enable= names it, and the tool uses the broker as the caller.
func TestMCPHTTPRequest(t *testing.T) {
	t.Parallel()
	e, _ := newSecretsEnv(t)
	up := newEchoServer(t)
	const value = "mcp-secret-value-5150"
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "TOK", Value: value, AllowedHosts: []string{"127.0.0.1"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"TOK"}})

	list := func(path string) (int, string) {
		resp, body := e.do("POST", path, e.KeyA, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		return resp.StatusCode, string(body)
	}
	if code, body := list("/mcp/"); code != 200 || strings.Contains(body, `"http_request"`) {
		t.Errorf("/mcp/ offers http_request by default: %d", code)
	}
	if code, body := list("/mcp/?enable=http_request"); code != 200 || !strings.Contains(body, `"http_request"`) {
		t.Errorf("/mcp/?enable=http_request: %d %s", code, body)
	}
	resp, body := e.do("POST", "/mcp/?enable=bogus", e.KeyA, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Content-Type", "application/json")
	wantError(t, resp, body, 422, api.CodeValidation)

	args, _ := json.Marshal(map[string]any{"session_id": sb.ID, "method": "GET", "url": up.URL + "/x", "headers": map[string]string{"Authorization": "{{secret:TOK}}"}})
	rpc := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"http_request","arguments":%s}}`, args)
	resp, body = e.do("POST", "/mcp/?enable=http_request", e.KeyA, rpc, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "HTTP 200") || !strings.Contains(string(body), "[REDACTED_SECRET:TOK]") || strings.Contains(string(body), value) {
		t.Errorf("http_request over MCP: %d %s", resp.StatusCode, body)
	}
	if reqs := up.requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != value {
		t.Errorf("destination got %v", reqs)
	}
}

// TestSecretEnv: the weaker mode puts a secret's value in one exec's
// environment only when the server allows it; the value is redacted from
// the result and the audit log names the secret only.
func TestSecretEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, dir)
	e := newEnvWithStore(t, server.Config{Secrets: testSecrets(t, st), SecretEnv: true}, st)
	const value = "env-secret-value-7788"
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"exit_code":0,"stdout":"token=%s\n","stderr":"","duration_ms":1}`, req.Env["TOKEN"])
	}
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "API_TOKEN", Value: value, AllowedHosts: []string{"a.example.com"}})
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "OTHER", Value: "other-9", AllowedHosts: []string{"a.example.com"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"API_TOKEN"}})

	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo token=$TOKEN", SecretEnv: map[string]string{"TOKEN": "API_TOKEN"}})
	if resp.StatusCode != 200 || !strings.Contains(string(body), "token=[REDACTED_SECRET:API_TOKEN]") || strings.Contains(string(body), value) {
		t.Errorf("exec with secret_env: %d %s", resp.StatusCode, body)
	}
	reqs, _ := e.Sidecar.Requests()
	if len(reqs) != 1 || reqs[0].Env["TOKEN"] != value || reqs[0].SecretEnv != nil {
		t.Errorf("the sidecar got %+v", reqs)
	}
	_, logBody := e.do("GET", sandboxPath(sb.ID, "/log"), e.KeyA, nil)
	if !strings.Contains(string(logBody), `"secret_env":{"TOKEN":"API_TOKEN"}`) || strings.Contains(string(logBody), value) {
		t.Errorf("audit log: %s", logBody)
	}
	for _, tt := range []struct {
		req    api.ExecRequest
		header []string
		status int
		code   string
	}{
		{api.ExecRequest{Command: "true", SecretEnv: map[string]string{"TOKEN": "OTHER"}}, nil, 404, api.CodeSecretNotReferenced},
		{api.ExecRequest{Command: "true", SecretEnv: map[string]string{"LD_PRELOAD": "API_TOKEN"}}, nil, 422, api.CodeValidation},
		{api.ExecRequest{Command: "true", SecretEnv: map[string]string{"1X": "API_TOKEN"}}, nil, 422, api.CodeValidation},
		{api.ExecRequest{Command: "true", Env: map[string]string{"TOKEN": "x"}, SecretEnv: map[string]string{"TOKEN": "API_TOKEN"}}, nil, 422, api.CodeValidation},
		{api.ExecRequest{Command: "true", SecretEnv: map[string]string{"TOKEN": "API_TOKEN"}}, []string{"Accept", api.ContentTypeNDJSON}, 422, api.CodeValidation},
	} {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, tt.req, tt.header...)
		wantError(t, resp, body, tt.status, tt.code)
	}

	// Off by default.
	off, _ := newSecretsEnv(t)
	createSecret(t, off, off.KeyA, api.CreateSecretRequest{Name: "API_TOKEN", Value: value, AllowedHosts: []string{"a.example.com"}})
	sb2 := off.create(off.KeyA, api.CreateSandboxRequest{SecretNames: []string{"API_TOKEN"}})
	resp, body = off.do("POST", sandboxPath(sb2.ID, "/exec"), off.KeyA, api.ExecRequest{Command: "true", SecretEnv: map[string]string{"TOKEN": "API_TOKEN"}})
	wantError(t, resp, body, 422, api.CodeNotSupported)
}

// TestSecretEnvNUL: a secret whose value holds a NUL byte (values are
// any UTF-8 text) is refused for secret_env by the server, naming the
// secret with a hint, before the exec reaches the sandbox, whose sidecar
// said only "env variable X contains a NUL byte" (session 20, state20).
func TestSecretEnvNUL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, dir)
	e := newEnvWithStore(t, server.Config{Secrets: testSecrets(t, st), SecretEnv: true}, st)
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "NULLY", Value: "a\x00b", AllowedHosts: []string{"a.example.com"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"NULLY"}})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "true", SecretEnv: map[string]string{"X": "NULLY"}})
	wantError(t, resp, body, 422, api.CodeValidation)
	var env api.ErrorEnvelope
	mustUnmarshal(t, body, &env)
	if !strings.Contains(env.Error.Message, "NULLY") || env.Error.Hint == "" {
		t.Errorf("refusal %+v, want it to name the secret, with a hint", env.Error)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 0 {
		t.Errorf("the exec reached the sidecar: %+v", reqs)
	}
}

// TestHTTPRequestEchoes: echoes the redactor must still see — a
// compressed answer to a request that asked for compression itself, and
// a value straddling the answer's size limit — come back redacted, and a
// value with URL and JSON syntax in it reaches the destination as is.
func TestHTTPRequestEchoes(t *testing.T) {
	t.Parallel()
	e, _ := newSecretsEnv(t)
	const value = `v@l/u+e=&"<>\ü-77431`
	var got []string
	up := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("X-Api-Key")
		got = append(got, k)
		switch r.URL.Path {
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, "echo %s", k)
			_ = zw.Close()
		case "/big":
			fmt.Fprint(w, strings.Repeat("x", api.MaxHTTPResponseBody-5)+k)
		case "/json-ascii":
			// As PHP's json_encode and Python's json.dumps write it: `\/`,
			// and every non-ASCII character as \uXXXX.
			var b strings.Builder
			for _, r := range k {
				switch {
				case r == '/' || r == '"' || r == '\\':
					b.WriteString(`\` + string(r))
				case r > 0x7f:
					fmt.Fprintf(&b, `\u%04x`, r)
				default:
					b.WriteRune(r)
				}
			}
			fmt.Fprintf(w, `{"key":"%s"}`, b.String())
		}
	}))
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "ODD", Value: value, AllowedHosts: []string{"127.0.0.1"}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"ODD"}})
	for _, tt := range []struct {
		path, wantEnd string
		truncated     bool
	}{
		{"/gzip", "echo [REDACTED_SECRET:ODD]", false},
		{"/big", "xxxxx[REDA", true},
		{"/json-ascii", `{"key":"[REDACTED_SECRET:ODD]"}`, false},
	} {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/http-request"), e.KeyA, api.HTTPRequest{
			URL: up.URL + tt.path, Headers: map[string]string{"X-Api-Key": "{{secret:ODD}}", "Accept-Encoding": "gzip"},
		})
		var res api.HTTPResponse
		mustUnmarshal(t, body, &res)
		if resp.StatusCode != 200 || !strings.HasSuffix(res.Body, tt.wantEnd) || res.Truncated != tt.truncated {
			t.Errorf("%s: %d, truncated %v, ends %q", tt.path, resp.StatusCode, res.Truncated, res.Body[max(0, len(res.Body)-40):])
		}
		if strings.Contains(string(body), value[:5]) {
			t.Errorf("%s: the answer has (part of) the value", tt.path)
		}
	}
	if len(got) != 3 || got[0] != value || got[1] != value || got[2] != value {
		t.Errorf("the destination got %q", got)
	}
}
