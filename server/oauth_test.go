package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// tsSDKEnv names a directory with node_modules/@modelcontextprotocol/sdk
// (.ci/run installs it; cmd/boxkite-mcp's test uses the same).
const tsSDKEnv = "BOXKITE_TEST_MCP_TS_SDK"

const oauthRedirect = "http://127.0.0.1:53682/callback"

// oauthFlow is a client of the authorization server, in Go, for the
// tests that need more control than the TypeScript SDK gives.
type oauthFlow struct {
	t        testing.TB
	e        *env
	hc       *http.Client // follows no redirects
	clientID string
	regToken string
	verifier string
}

func newOAuthFlow(t testing.TB, e *env) *oauthFlow {
	f := &oauthFlow{t: t, e: e, hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, b := e.do("POST", "/oauth/register", "", map[string]any{"client_name": "go test", "redirect_uris": []string{oauthRedirect}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	var reg struct{ ClientID, RegistrationAccessToken string }
	var raw map[string]any
	mustUnmarshal(t, b, &raw)
	reg.ClientID, _ = raw["client_id"].(string)
	reg.RegistrationAccessToken, _ = raw["registration_access_token"].(string)
	if !strings.HasPrefix(reg.ClientID, "mcp_client_") || reg.RegistrationAccessToken == "" {
		t.Fatalf("registration answer %s", b)
	}
	f.clientID, f.regToken = reg.ClientID, reg.RegistrationAccessToken
	return f
}

func (f *oauthFlow) send(method, path string, form url.Values, cookie string) *http.Response {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, f.e.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// authParams is an authorization request with a fresh PKCE pair.
func (f *oauthFlow) authParams() url.Values {
	v := make([]byte, 32)
	_, _ = rand.Read(v)
	f.verifier = base64.RawURLEncoding.EncodeToString(v)
	sum := sha256.Sum256([]byte(f.verifier))
	return url.Values{
		"response_type": {"code"}, "client_id": {f.clientID}, "redirect_uri": {oauthRedirect},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {"xyz"}, "resource": {f.e.URL + "/mcp/"},
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// authorize signs in as email on the consent page and approves; it
// returns the code.
func (f *oauthFlow) authorize(email, password string) string {
	f.t.Helper()
	p := f.authParams()
	login := url.Values{"email": {email}, "password": {password}}
	for k, v := range p {
		login[k] = v
	}
	resp := f.send("POST", "/oauth/authorize/login", login, "")
	if b := readAll(f.t, resp); resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("login: %d %s", resp.StatusCode, b)
	}
	cookie := strings.Split(resp.Header.Get("Set-Cookie"), ";")[0]
	resp = f.send("GET", resp.Header.Get("Location"), nil, cookie)
	page := readAll(f.t, resp)
	m := csrfRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		f.t.Fatalf("consent page: %d %s", resp.StatusCode, page)
	}
	p.Set("csrf", m[1])
	p.Set("decision", "approve")
	resp = f.send("POST", "/oauth/authorize/decide", p, cookie)
	readAll(f.t, resp)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != "xyz" {
		f.t.Fatalf("decide: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

type oauthTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	Error        string `json:"error"`
}

// token posts to /oauth/token and returns the status and answer.
func (f *oauthFlow) token(form url.Values) (int, oauthTokens) {
	f.t.Helper()
	if form.Get("client_id") == "" {
		form.Set("client_id", f.clientID)
	}
	resp := f.send("POST", "/oauth/token", form, "")
	b := readAll(f.t, resp)
	var tok oauthTokens
	mustUnmarshal(f.t, []byte(b), &tok)
	return resp.StatusCode, tok
}

func (f *oauthFlow) exchange(code string) oauthTokens {
	f.t.Helper()
	st, tok := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {f.verifier}, "redirect_uri": {oauthRedirect}})
	if st != http.StatusOK || tok.AccessToken == "" || tok.RefreshToken == "" {
		f.t.Fatalf("exchange: %d %+v", st, tok)
	}
	return tok
}

func (f *oauthFlow) refresh(rt string) (int, oauthTokens) {
	return f.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
}

// TestMCPOAuthTypeScriptSDK is acceptance 1 of issue 24: the official
// TypeScript MCP SDK's OAuth client registers, authorizes with PKCE
// (loopback redirect), gets a token, lists and calls tools on /mcp/,
// refreshes, and a reused refresh token revokes the family. About 3 s.
func TestMCPOAuthTypeScriptSDK(t *testing.T) {
	t.Parallel()
	sdk := os.Getenv(tsSDKEnv)
	if sdk == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set but CI is: .ci/run installs @modelcontextprotocol/sdk", tsSDKEnv)
		}
		t.Skipf("%s is not set", tsSDKEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed but %s is set: %v", tsSDKEnv, err)
	}
	e := newEnv(t, server.Config{MCPOAuth: true, RateLimits: server.RateLimits{Auth: 1000}})
	e.signup("oauth@example.com", "password1")

	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "mcp_oauth_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), e.URL, "oauth@example.com", "password1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Error, ClientID, TokenType, Refresh, Reuse, NewestAfterReuse, RedirectedTo string
		StateKept, Rotated                                                         bool
		AccessAfterReuse, AccessWithoutToken                                       int
		First, Second                                                              struct {
			Tools                  []string
			Created, Exec, Sandbox string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if out.Error != "" {
		t.Fatalf("the SDK flow failed: %s\nserver log:\n%s", out.Error, e.Logs.String())
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"registered a client", strings.HasPrefix(out.ClientID, "mcp_client_")},
		{"redirected to the loopback URI with the state", out.RedirectedTo == oauthRedirect && out.StateKept},
		{"bearer tokens", strings.EqualFold(out.TokenType, "bearer")},
		{"tools listed", len(out.First.Tools) > 10 && strings.Contains(strings.Join(out.First.Tools, ","), "create_sandbox")},
		{"create_sandbox called", strings.HasPrefix(out.First.Created, "Created sandbox ")},
		{"exec called", strings.Contains(out.First.Exec, "over-oauth")},
		{"refreshed", out.Refresh == "AUTHORIZED" && out.Rotated},
		{"tools with the refreshed token", strings.HasPrefix(out.Second.Created, "Created sandbox ")},
		{"reused refresh token refused", out.Reuse == "invalid_grant"},
		{"family revoked: newest refresh token refused", out.NewestAfterReuse == "invalid_grant"},
		{"family revoked: access token refused", out.AccessAfterReuse == http.StatusUnauthorized},
		{"no token: 401", out.AccessWithoutToken == http.StatusUnauthorized},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: no (output %s)", c.name, stdout.String())
		}
	}
	// The sandboxes belong to the account that signed in.
	acct, _, err := e.Store.PasswordHash(context.Background(), "oauth@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{out.First.Sandbox, out.Second.Sandbox} {
		if _, err := e.Store.Sandbox(context.Background(), acct.ID, id); err != nil {
			t.Errorf("sandbox %s of the signed-in account: %v", id, err)
		}
	}
}

// mcpOAuthStatus posts tools/list to /mcp/ with token and returns the
// status and the WWW-Authenticate header.
func mcpOAuthStatus(e *env, token string, header ...string) (int, string) {
	resp, _ := e.do("POST", "/mcp/", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, header...)...)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestMCPOAuthServer: metadata, the 401 challenge, PKCE and code checks
// (a code used twice revokes its grant), rotation with reuse detection, revocation, client deletion, audience,
// and where an OAuth token is not accepted.
func TestMCPOAuthServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{MCPOAuth: true, RateLimits: server.RateLimits{Auth: 1000}})
	e.signup("o@example.com", "password1")

	resp, b := e.do("GET", "/.well-known/oauth-authorization-server", "", nil)
	var meta map[string]any
	mustUnmarshal(t, b, &meta)
	if resp.StatusCode != 200 || meta["issuer"] != e.URL || meta["token_endpoint"] != e.URL+"/oauth/token" ||
		!strings.Contains(string(b), `"code_challenge_methods_supported":["S256"]`) {
		t.Errorf("server metadata: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, b := e.do("GET", p, "", nil)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"resource":"`+e.URL+`/mcp/"`) {
			t.Errorf("%s: %d %s", p, resp.StatusCode, b)
		}
	}
	if st, wa := mcpOAuthStatus(e, ""); st != 401 || wa != `Bearer realm="boxkite", resource_metadata="`+e.URL+`/.well-known/oauth-protected-resource/mcp"` {
		t.Errorf("401 challenge: %d %q", st, wa)
	}

	f := newOAuthFlow(t, e)
	tok := f.exchange(f.authorize("o@example.com", "password1"))
	if st, _ := mcpOAuthStatus(e, tok.AccessToken); st != 200 {
		t.Fatalf("/mcp/ with the access token: %d", st)
	}
	// Not a REST credential, nor for another resource (Host).
	resp, b = e.do("GET", "/v1/sandboxes", tok.AccessToken, nil)
	wantError(t, resp, b, 401, api.CodeWrongCredentialType)
	resp, b = e.do("GET", "/v1/api-keys", tok.AccessToken, nil)
	wantError(t, resp, b, 401, api.CodeInvalidToken)
	req, _ := http.NewRequest("POST", e.URL+"/mcp/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Host = "other.example"
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("token for another audience (Host): %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	t.Run("code", func(t *testing.T) {
		code := f.authorize("o@example.com", "password1")
		good := f.verifier
		bad := strings.Repeat("a", 43)
		for _, tt := range []struct {
			name string
			form url.Values
		}{
			{"wrong verifier", url.Values{"code_verifier": {bad}, "redirect_uri": {oauthRedirect}}},
			{"wrong redirect", url.Values{"code_verifier": {good}, "redirect_uri": {"http://127.0.0.1:1/x"}}},
		} {
			tt.form.Set("grant_type", "authorization_code")
			code2 := f.authorize("o@example.com", "password1")
			tt.form.Set("code", code2)
			tt.form.Set("code_verifier", strings.Replace(tt.form.Get("code_verifier"), good, f.verifier, 1))
			if st, r := f.token(tt.form); st != 400 || r.Error != "invalid_grant" {
				t.Errorf("%s: %d %+v", tt.name, st, r)
			}
		}
		f.verifier = good
		// A refused exchange (here a wrong verifier) does not spend the
		// code: the request did not prove it holds the verifier, and
		// spending it would let whoever intercepted the code (the attack
		// PKCE is for) cancel the client's sign-in. The right verifier
		// still exchanges it.
		if st, r := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {bad}, "redirect_uri": {oauthRedirect}}); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("wrong verifier for the code: %d %+v", st, r)
		}
		first := f.exchange(code)
		st, rotated := f.refresh(first.RefreshToken)
		if st != 200 {
			t.Fatalf("refresh of the first exchange's token: %d %+v", st, rotated)
		}
		if st, _ := mcpOAuthStatus(e, rotated.AccessToken); st != 200 {
			t.Fatalf("/mcp/ with the first exchange's grant: %d", st)
		}
		if st, r := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {good}, "redirect_uri": {oauthRedirect}}); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("code used twice: %d %+v", st, r)
		}
		// The second use revokes the grant the first issued (OAuth 2.1
		// §4.1.3): its access tokens and its refresh token family.
		for _, a := range []string{first.AccessToken, rotated.AccessToken} {
			if st, _ := mcpOAuthStatus(e, a); st != 401 {
				t.Errorf("access token of the reused code's grant: %d, want 401", st)
			}
		}
		if st, r := f.refresh(rotated.RefreshToken); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("refresh token of the reused code's grant: %d %+v", st, r)
		}
		late := f.authorize("o@example.com", "password1")
		e.clock.Advance(61 * time.Second)
		if st, r := f.token(url.Values{"grant_type": {"authorization_code"}, "code": {late}, "code_verifier": {f.verifier}, "redirect_uri": {oauthRedirect}}); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("code after 60 s: %d %+v", st, r)
		}
	})

	t.Run("rotation and reuse", func(t *testing.T) {
		t1 := f.exchange(f.authorize("o@example.com", "password1"))
		st, t2 := f.refresh(t1.RefreshToken)
		if st != 200 || t2.RefreshToken == t1.RefreshToken || t2.ExpiresIn != 900 {
			t.Fatalf("refresh: %d %+v", st, t2)
		}
		if st, r := f.refresh(t1.RefreshToken); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("reuse: %d %+v", st, r)
		}
		if st, r := f.refresh(t2.RefreshToken); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("newest after reuse: %d %+v", st, r)
		}
		for _, a := range []string{t1.AccessToken, t2.AccessToken} {
			if st, _ := mcpOAuthStatus(e, a); st != 401 {
				t.Errorf("access token of a revoked family: %d", st)
			}
		}
		// Another client cannot spend this client's refresh token.
		t3 := f.exchange(f.authorize("o@example.com", "password1"))
		other := newOAuthFlow(t, e)
		if st, r := other.refresh(t3.RefreshToken); st != 400 || r.Error != "invalid_grant" {
			t.Errorf("other client's refresh: %d %+v", st, r)
		}
	})

	t.Run("revocation", func(t *testing.T) {
		t1 := f.exchange(f.authorize("o@example.com", "password1"))
		resp := f.send("POST", "/oauth/revoke", url.Values{"token": {t1.RefreshToken}, "client_id": {f.clientID}}, "")
		if readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		if st, _ := mcpOAuthStatus(e, t1.AccessToken); st != 401 {
			t.Errorf("access token after revocation: %d", st)
		}
		resp = f.send("POST", "/oauth/revoke", url.Values{"token": {"nonsense"}}, "")
		if readAll(t, resp); resp.StatusCode != 200 {
			t.Errorf("revoking an unknown token: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("client deletion", func(t *testing.T) {
		g := newOAuthFlow(t, e)
		t1 := g.exchange(g.authorize("o@example.com", "password1"))
		resp, _ := e.do("DELETE", "/oauth/register/"+g.clientID, "wrong", nil)
		if resp.StatusCode != 401 {
			t.Errorf("delete with a wrong token: %d", resp.StatusCode)
		}
		if resp, b := e.do("DELETE", "/oauth/register/"+g.clientID, g.regToken, nil); resp.StatusCode != 204 {
			t.Fatalf("delete: %d %s", resp.StatusCode, b)
		}
		if st, _ := mcpOAuthStatus(e, t1.AccessToken); st != 401 {
			t.Errorf("access token of a deleted client: %d", st)
		}
		if st, r := g.refresh(t1.RefreshToken); st != 401 || r.Error != "invalid_client" {
			t.Errorf("refresh of a deleted client: %d %+v", st, r)
		}
	})

	t.Run("consent refusals", func(t *testing.T) {
		p := f.authParams()
		p.Set("code_challenge_method", "plain")
		resp := f.send("GET", "/oauth/authorize?"+p.Encode(), nil, "")
		readAll(t, resp)
		if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || !strings.Contains(loc, "error=invalid_request") {
			t.Errorf("plain PKCE: %d %s", resp.StatusCode, loc)
		}
		p = f.authParams()
		p.Set("redirect_uri", "https://evil.example/cb")
		resp = f.send("GET", "/oauth/authorize?"+p.Encode(), nil, "")
		if readAll(t, resp); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
			t.Errorf("unregistered redirect: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		p = f.authParams()
		login := url.Values{"email": {"o@example.com"}, "password": {"wrong-password"}}
		for k, v := range p {
			login[k] = v
		}
		resp = f.send("POST", "/oauth/authorize/login", login, "")
		if body := readAll(t, resp); resp.StatusCode != 401 || resp.Header.Get("Set-Cookie") != "" || !strings.Contains(body, "wrong email or password") {
			t.Errorf("wrong password: %d %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
		p.Set("decision", "approve")
		p.Set("csrf", "forged")
		resp = f.send("POST", "/oauth/authorize/decide", p, "")
		if readAll(t, resp); resp.StatusCode != 401 || resp.Header.Get("Location") != "" {
			t.Errorf("decide without a session: %d", resp.StatusCode)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("X-Frame-Options = %q", got)
		}
	})

	// A parameter that is not text (bytes that are not UTF-8, a NUL):
	// the browser gets a page, or, once the client and its redirect URI
	// are known good, is sent back to the client with error= (RFC 6749
	// §4.1.2.1). The guard answered the API's JSON envelope before (422),
	// which a browser shows as raw JSON.
	t.Run("malformed requests", func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			set, val string
			redirect bool // else a page
		}{
			{"unknown client", "client_id", "\xff", false},
			{"redirect_uri not text", "redirect_uri", oauthRedirect + "\xff", false},
			{"redirect_uri with a NUL", "redirect_uri", oauthRedirect + "\x00", false},
			{"scope", "scope", "mcp\xff", true},
			{"state", "state", "\x00", true},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := f.authParams()
				p.Set(tt.set, tt.val)
				for _, send := range []func() *http.Response{
					func() *http.Response { return f.send("GET", "/oauth/authorize?"+p.Encode(), nil, "") },
					func() *http.Response {
						login := url.Values{"email": {"o@example.com"}, "password": {"password1"}}
						for k, v := range p {
							login[k] = v
						}
						return f.send("POST", "/oauth/authorize/login", login, "")
					},
				} {
					resp := send()
					body := readAll(t, resp)
					loc := resp.Header.Get("Location")
					if !tt.redirect {
						if resp.StatusCode != 400 || loc != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
							!strings.Contains(body, "This authorization request cannot be read: query parameter "+tt.set) && !strings.Contains(body, "form parameter "+tt.set) {
							t.Errorf("%s %s: %d %q %q, want a 400 page naming %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, loc, body, tt.set)
						}
						continue
					}
					u, err := url.Parse(loc)
					if resp.StatusCode != 302 || err != nil || !strings.HasPrefix(loc, oauthRedirect+"?") || u.Query().Get("error") != "invalid_request" ||
						!strings.Contains(u.Query().Get("error_description"), tt.set) || u.Query().Get("iss") != e.URL {
						t.Errorf("%s %s: %d %q, want a redirect to the client with error=invalid_request naming %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, loc, tt.set)
					}
					if got := u.Query().Get("state"); tt.set == "state" && got != "" || tt.set != "state" && got != "xyz" {
						t.Errorf("redirect's state = %q", got)
					}
				}
			})
		}
	})

	t.Run("registration refusals", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"redirect_uris": []string{"http://example.com/cb"}},
			{"redirect_uris": []string{}},
			{"redirect_uris": []string{"https://example.com/cb#frag"}},
			{"redirect_uris": []string{"https://example.com/cb"}, "token_endpoint_auth_method": "client_secret_basic"},
			{"redirect_uris": []string{"https://example.com/cb"}, "grant_types": []string{"client_credentials"}},
		} {
			resp, b := e.do("POST", "/oauth/register", "", body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), `"error":"invalid_`) {
				t.Errorf("register %v: %d %s", body, resp.StatusCode, b)
			}
		}
	})
}

// TestMCPOAuthOff: without Config.MCPOAuth there is no authorization
// server and /mcp/'s 401 names none.
func TestMCPOAuthOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	if resp, _ := e.do("GET", "/.well-known/oauth-authorization-server", "", nil); resp.StatusCode != 404 {
		t.Errorf("metadata without --mcp-oauth: %d", resp.StatusCode)
	}
	if st, wa := mcpOAuthStatus(e, ""); st != 401 || strings.Contains(wa, "resource_metadata") {
		t.Errorf("401 without --mcp-oauth: %d %q", st, wa)
	}
}
