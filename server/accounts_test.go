package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// setClock sets c to t.
func setClock(c *clock, t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// signup creates an account through the API and returns its access token.
func (e *env) signup(email, password string) api.TokenResponse {
	e.t.Helper()
	resp, body := e.do("POST", "/v1/auth/signup", "", api.Credentials{Email: email, Password: password})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("signup %s: %d %s", email, resp.StatusCode, body)
	}
	var tok api.TokenResponse
	mustUnmarshal(e.t, body, &tok)
	return tok
}

// newKey creates an API key with the credential (token or admin key).
func (e *env) newKey(cred, name, role string) api.APIKeyCreated {
	e.t.Helper()
	resp, body := e.do("POST", "/v1/api-keys", cred, api.CreateAPIKeyRequest{Name: name, Role: role})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create key %s: %d %s", name, resp.StatusCode, body)
	}
	var k api.APIKeyCreated
	mustUnmarshal(e.t, body, &k)
	return k
}

func TestSignupAndLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{RateLimits: server.RateLimits{Auth: 1000}})
	tok := e.signup("  Ada@Example.com ", "correct horse")
	if tok.TokenType != "bearer" || tok.ExpiresIn != 1800 || tok.RefreshToken != nil || tok.AccessToken == "" {
		t.Errorf("signup answer = %+v, want a bearer token for 1800 s and no refresh token", tok)
	}
	if tok.Account.Email != "ada@example.com" || tok.Account.ID == "" {
		t.Errorf("signup account = %+v, want the email lower-cased and trimmed", tok.Account)
	}

	resp, body := e.do("POST", "/v1/auth/login", "", api.Credentials{Email: "ADA@example.com", Password: "correct horse"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("login Cache-Control = %q, want no-store", resp.Header.Get("Cache-Control"))
	}
	var login api.TokenResponse
	mustUnmarshal(t, body, &login)
	if login.Account != tok.Account {
		t.Errorf("login account = %+v, want %+v", login.Account, tok.Account)
	}

	// The token works on a token route and names the account.
	resp, body = e.do("GET", "/v1/account/me", login.AccessToken, nil)
	var me api.Account
	mustUnmarshal(t, body, &me)
	if resp.StatusCode != 200 || me.ID != tok.Account.ID || me.APIKey != nil {
		t.Errorf("GET /v1/account/me = %d %s", resp.StatusCode, body)
	}

	tests := []struct {
		name, path string
		body       any
		status     int
		code       string
		field      string
	}{
		{"signup taken", "/v1/auth/signup", api.Credentials{Email: "ada@EXAMPLE.com", Password: "another one"}, 409, api.CodeEmailTaken, ""},
		{"signup no email", "/v1/auth/signup", api.Credentials{Password: "long enough"}, 422, api.CodeValidation, "email"},
		{"signup bad email", "/v1/auth/signup", api.Credentials{Email: "nobody", Password: "long enough"}, 422, api.CodeValidation, "email"},
		{"signup two @", "/v1/auth/signup", api.Credentials{Email: "a@b@c", Password: "long enough"}, 422, api.CodeValidation, "email"},
		{"signup space in email", "/v1/auth/signup", api.Credentials{Email: "a b@c.d", Password: "long enough"}, 422, api.CodeValidation, "email"},
		{"signup short password", "/v1/auth/signup", api.Credentials{Email: "b@example.com", Password: "1234567"}, 422, api.CodeValidation, "password"},
		{"signup long password", "/v1/auth/signup", api.Credentials{Email: "b@example.com", Password: strings.Repeat("x", 201)}, 422, api.CodeValidation, "password"},
		{"signup not json", "/v1/auth/signup", `{"email":`, 400, api.CodeBadRequest, ""},
		{"login wrong password", "/v1/auth/login", api.Credentials{Email: "ada@example.com", Password: "wrong horse"}, 401, api.CodeInvalidCredentials, ""},
		{"login unknown email", "/v1/auth/login", api.Credentials{Email: "eve@example.com", Password: "correct horse"}, 401, api.CodeInvalidCredentials, ""},
		{"login account without password", "/v1/auth/login", api.Credentials{Email: "a@example.com", Password: "anything at all"}, 401, api.CodeInvalidCredentials, ""},
		{"login no password", "/v1/auth/login", api.Credentials{Email: "ada@example.com"}, 422, api.CodeValidation, "password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", tt.path, "", tt.body)
			ae := wantError(t, resp, body, tt.status, tt.code)
			if tt.field != "" && !strings.Contains(string(body), `"`+tt.field+`"`) {
				t.Errorf("details do not name %q: %s", tt.field, body)
			}
			if strings.Contains(string(body), "horse") {
				t.Errorf("the answer echoes the password: %s", body)
			}
			if tt.status == 401 && ae.Message != "wrong email or password" {
				t.Errorf("401 message = %q; unknown emails and wrong passwords must read the same", ae.Message)
			}
		})
	}
}

func TestCredentialTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	tok := e.signup("c@example.com", "password1").AccessToken
	key := e.newKey(tok, "k", api.RoleAdmin).Key
	member := e.newKey(tok, "m", api.RoleMember).Key
	tests := []struct {
		name, method, path, cred string
		status                   int
		code                     string
	}{
		{"token on a key route", "GET", "/v1/sandboxes", tok, 401, api.CodeWrongCredentialType},
		{"token on the account", "GET", "/v1/account", tok, 401, api.CodeWrongCredentialType},
		{"key on a token route", "GET", "/v1/account/me", key, 401, api.CodeWrongCredentialType},
		{"garbage on a token route", "GET", "/v1/account/me", "not-a-token", 401, api.CodeInvalidToken},
		{"nothing on a token route", "GET", "/v1/account/me", "", 401, api.CodeUnauthorized},
		{"member key lists keys", "GET", "/v1/api-keys", member, 403, api.CodeForbidden},
		{"member key creates a key", "POST", "/v1/api-keys", member, 403, api.CodeForbidden},
		{"nothing lists keys", "GET", "/v1/api-keys", "", 401, api.CodeUnauthorized},
		{"token lists keys", "GET", "/v1/api-keys", tok, 200, ""},
		{"admin key lists keys", "GET", "/v1/api-keys", key, 200, ""},
		{"key on the account", "GET", "/v1/account", key, 200, ""},
		{"member key on the account", "GET", "/v1/account", member, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.method == "POST" {
				body = api.CreateAPIKeyRequest{Name: "x"}
			}
			resp, b := e.do(tt.method, tt.path, tt.cred, body)
			if tt.code == "" {
				if resp.StatusCode != tt.status {
					t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, b)
				}
				return
			}
			if ae := wantError(t, resp, b, tt.status, tt.code); ae.Hint == "" && tt.status != 403 {
				t.Errorf("no hint: %s", b)
			}
		})
	}
}

// forge signs claims with key as the server would, or leaves the
// signature off.
func forge(key []byte, header, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	signed := enc([]byte(header)) + "." + enc([]byte(claims))
	return signed + "." + enc(server.SignHS256(key, signed))
}

func TestAccessTokenChecks(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("k", 32)
	e := newEnv(t, server.Config{JWTSecret: secret, AccessTokenTTL: 10 * time.Minute})
	tok := e.signup("t@example.com", "password1")
	if tok.ExpiresIn != 600 {
		t.Errorf("expires_in = %d, want 600", tok.ExpiresIn)
	}
	parts := strings.Split(tok.AccessToken, ".")
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	mustUnmarshal(t, b, &claims)
	for _, c := range []string{"sub", "email", "type", "iat", "exp"} {
		if _, ok := claims[c]; !ok {
			t.Errorf("claims %v lack %q", claims, c)
		}
	}
	if claims["type"] != "access" || claims["sub"] != tok.Account.ID {
		t.Errorf("claims = %v", claims)
	}
	now := e.clock.Now().Unix()
	good := `{"alg":"HS256","typ":"JWT"}`
	claimsFor := func(typ, sub string, iat, exp int64) string {
		j, _ := json.Marshal(map[string]any{"sub": sub, "email": "t@example.com", "type": typ, "iat": iat, "exp": exp})
		return string(j)
	}
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 1
		return string(b)
	}
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"as issued", tok.AccessToken, true},
		{"forged with the right key", forge([]byte(secret), good, claimsFor("access", tok.Account.ID, now, now+60)), true},
		{"signature tampered", parts[0] + "." + parts[1] + "." + flip(parts[2]), false},
		{"payload tampered", parts[0] + "." + flip(parts[1]) + "." + parts[2], false},
		{"other key", forge([]byte(strings.Repeat("x", 32)), good, claimsFor("access", tok.Account.ID, now, now+60)), false},
		{"alg none", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".", false},
		{"alg HS512", forge([]byte(secret), `{"alg":"HS512","typ":"JWT"}`, claimsFor("access", tok.Account.ID, now, now+60)), false},
		{"wrong type", forge([]byte(secret), good, claimsFor("sandbox_takeover", tok.Account.ID, now, now+60)), false},
		{"expired", forge([]byte(secret), good, claimsFor("access", tok.Account.ID, now-120, now-1)), false},
		{"issued in the future", forge([]byte(secret), good, claimsFor("access", tok.Account.ID, now+3600, now+7200)), false},
		{"unknown account", forge([]byte(secret), good, claimsFor("access", model.NewID(), now, now+60)), false},
		{"two parts", parts[0] + "." + parts[1], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("GET", "/v1/account/me", tt.token, nil)
			if tt.ok {
				if resp.StatusCode != 200 {
					t.Errorf("status = %d, want 200: %s", resp.StatusCode, body)
				}
				return
			}
			wantError(t, resp, body, 401, api.CodeInvalidToken)
		})
	}

	// The token expires after the TTL, by the server's clock.
	e.clock.Advance(10*time.Minute - time.Second)
	if resp, body := e.do("GET", "/v1/api-keys", tok.AccessToken, nil); resp.StatusCode != 200 {
		t.Fatalf("just before expiry: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(time.Second)
	resp, body := e.do("GET", "/v1/api-keys", tok.AccessToken, nil)
	if ae := wantError(t, resp, body, 401, api.CodeInvalidToken); !strings.Contains(ae.Message, "expired") {
		t.Errorf("message %q does not say the token expired", ae.Message)
	}
}

// TestGeneratedSigningKey: without Config.JWTSecret the key is generated
// once and kept in the store, so tokens outlive a restart.
func TestGeneratedSigningKey(t *testing.T) {
	t.Parallel()
	e := newEnvWithStore(t, server.Config{}, openStore(t, t.TempDir()))
	tok := e.signup("g@example.com", "password1").AccessToken
	// A second server on the same database, as after a restart.
	srv, err := server.New(server.Config{}, e.Store, e.Driver, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e2 := *e
	e2.URL = httptestServer(t, srv)
	if resp, body := e2.do("GET", "/v1/account/me", tok, nil); resp.StatusCode != 200 {
		t.Errorf("token from the first server on the second: %d %s", resp.StatusCode, body)
	}
}

func TestAPIKeyManagement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	tok := e.signup("k@example.com", "password1").AccessToken

	created := e.newKey(tok, " ci ", "")
	if created.Role != api.RoleAdmin || created.Name != "ci" || !model.ValidAPIKey(created.Key) ||
		!strings.HasPrefix(created.Key, created.Prefix) || len(created.Prefix) != len("bxk_live_")+8 {
		t.Errorf("created key = %+v, want an admin key named ci whose prefix starts it", created)
	}
	e.clock.Advance(time.Second)
	member := e.newKey(tok, "bot", api.RoleMember)

	// The key works at once, and GET /v1/account names it.
	resp, body := e.do("GET", "/v1/account", created.Key, nil)
	var acct api.Account
	mustUnmarshal(t, body, &acct)
	if resp.StatusCode != 200 || acct.Email != "k@example.com" || acct.APIKey == nil || acct.APIKey.ID != created.ID {
		t.Fatalf("GET /v1/account with the new key = %d %s", resp.StatusCode, body)
	}

	// The list shows both, newest first, never the secret.
	resp, body = e.do("GET", "/v1/api-keys", tok, nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), created.Key) || strings.Contains(string(body), `"key"`) {
		t.Fatalf("list = %d %s; it must not carry secrets", resp.StatusCode, body)
	}
	var list []api.APIKey
	mustUnmarshal(t, body, &list)
	if got := []string{list[0].Name, list[1].Name}; len(list) != 2 || !cmp.Equal(got, []string{"bot", "ci"}) {
		t.Errorf("list names = %v, want [bot ci]", got)
	}

	// An admin key manages keys too (local mode has no password).
	viaKey := e.newKey(created.Key, "made by a key", api.RoleMember)

	// Revocation is immediate.
	if resp, body := e.do("DELETE", "/v1/api-keys/"+member.ID, created.Key, nil); resp.StatusCode != 204 {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/v1/sandboxes", member.Key, nil)
	wantError(t, resp, body, 401, api.CodeInvalidAPIKey)
	resp, body = e.do("DELETE", "/v1/api-keys/"+member.ID, tok, nil)
	wantError(t, resp, body, 404, api.CodeNotFound)
	_, body = e.do("GET", "/v1/api-keys", tok, nil)
	mustUnmarshal(t, body, &list)
	for _, k := range list {
		if (k.ID == member.ID) != (k.RevokedAt != nil) {
			t.Errorf("key %s (%s) revoked_at = %v", k.ID, k.Name, k.RevokedAt)
		}
	}
	// A key may revoke itself; the next request with it fails.
	if resp, body := e.do("DELETE", "/v1/api-keys/"+viaKey.ID, tok, nil); resp.StatusCode != 204 {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("DELETE", "/v1/api-keys/"+created.ID, created.Key, nil); resp.StatusCode != 204 {
		t.Fatalf("self-revoke: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/v1/account", created.Key, nil)
	wantError(t, resp, body, 401, api.CodeInvalidAPIKey)

	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"no name", api.CreateAPIKeyRequest{}, "name"},
		{"blank name", api.CreateAPIKeyRequest{Name: "   "}, "name"},
		{"long name", api.CreateAPIKeyRequest{Name: strings.Repeat("n", 201)}, "name"},
		{"control character", api.CreateAPIKeyRequest{Name: "a\x00b"}, "name"},
		{"unknown role", api.CreateAPIKeyRequest{Name: "x", Role: "owner"}, "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/api-keys", tok, tt.body)
			wantError(t, resp, body, 422, api.CodeValidation)
			if !strings.Contains(string(body), `"`+tt.field+`"`) {
				t.Errorf("details do not name %q: %s", tt.field, body)
			}
		})
	}
}

func authorizedKey(t *testing.T, comment string) (string, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
	if comment != "" {
		line += " " + comment
	}
	return line, ssh.FingerprintSHA256(sp)
}

func TestSSHKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	line, fp := authorizedKey(t, "ada@laptop")
	resp, body := e.do("POST", "/v1/account/ssh-keys", e.KeyA, api.AddSSHKeyRequest{PublicKey: line + "\n"})
	if resp.StatusCode != 201 {
		t.Fatalf("add: %d %s", resp.StatusCode, body)
	}
	var k api.SSHKey
	mustUnmarshal(t, body, &k)
	if k.Name != "ada@laptop" || k.Fingerprint != fp || !strings.HasPrefix(k.Fingerprint, "SHA256:") ||
		k.PublicKey != strings.TrimSuffix(line, " ada@laptop") {
		t.Errorf("added key = %+v, want name from the comment, fingerprint %s, no comment in public_key", k, fp)
	}
	resp, body = e.do("GET", "/v1/account/ssh-keys", e.KeyA, nil)
	var list []api.SSHKey
	mustUnmarshal(t, body, &list)
	if resp.StatusCode != 200 || len(list) != 1 || list[0] != k {
		t.Errorf("list = %d %s", resp.StatusCode, body)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weak, _ := ssh.NewPublicKey(&rsaKey.PublicKey)
	other, _ := authorizedKey(t, "")
	tests := []struct {
		name   string
		req    api.AddSSHKeyRequest
		status int
		code   string
		field  string
	}{
		{"duplicate", api.AddSSHKeyRequest{PublicKey: line}, 409, api.CodeSSHKeyExists, ""},
		{"duplicate by another account", api.AddSSHKeyRequest{PublicKey: line, Name: "again"}, 409, api.CodeSSHKeyExists, ""},
		{"empty", api.AddSSHKeyRequest{}, 422, api.CodeValidation, "public_key"},
		{"garbage", api.AddSSHKeyRequest{PublicKey: "ssh-ed25519 notbase64!!"}, 422, api.CodeValidation, "public_key"},
		{"private key", api.AddSSHKeyRequest{PublicKey: "-----BEGIN OPENSSH PRIVATE KEY-----"}, 422, api.CodeValidation, "public_key"},
		{"two keys", api.AddSSHKeyRequest{PublicKey: line + "\n" + other}, 422, api.CodeValidation, "public_key"},
		{"options", api.AddSSHKeyRequest{PublicKey: `command="rm -rf /" ` + other}, 422, api.CodeValidation, "public_key"},
		{"dsa", api.AddSSHKeyRequest{PublicKey: "ssh-dss AAAAB3NzaC1kc3MAAACBALgdXEahvl9se5Qkpi5pE/mID9pXhqhSo1LsJKZr46D7enxpI6PsoT+A+rnCgyAjESNlGivfaAhsrmVT/qnNfOpNQmwVWTFmzHLeXFX/PeLPCtFHaVAK9L6Tulv28xI++nsObMC9aXJoksYXb8DTJchAOMPmfnOVxE99dOPvGTCbAAAAFQCKR+vqUtEhJFgNdTsJ6m3cTSA9XwAAAIBBomXhvyCfEHjkg5QUOpdQONIQei43fbYZkxfTAGOafp5yh1TYgerwwM2O0d8ymm2iIUgDXahGQFWU8xtn5dlDLPnBtsPW428iEOBVzERh9x+OM2GjrzZuLoyqNf04+Xx1Ea3TCO01YkPvWIlTfwnxLE7tO71twQM/+FNyv6dPlQAAAIBm97XtpoyhL2iPDtSpzcfF9FsFcpAqqCwORrw2igRwq0SJl/1BMBkQeH0K2LVsNp2GEsOW3pbV5APz2UH59iglalW0rT9alPZWWslNgnfvp5YXQmhxHY7f4nurIpz1RVwIbroe1ygrY53j3K5vHTTG3mQoX0QsVokxdARB90VghQ=="}, 422, api.CodeValidation, "public_key"},
		{"weak rsa", api.AddSSHKeyRequest{PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(weak)))}, 422, api.CodeValidation, "public_key"},
		{"long name", api.AddSSHKeyRequest{PublicKey: other, Name: strings.Repeat("n", 201)}, 422, api.CodeValidation, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := e.KeyA
			if strings.Contains(tt.name, "another account") {
				key = e.KeyB
			}
			resp, body := e.do("POST", "/v1/account/ssh-keys", key, tt.req)
			wantError(t, resp, body, tt.status, tt.code)
			if tt.field != "" && !strings.Contains(string(body), `"`+tt.field+`"`) {
				t.Errorf("details do not name %q: %s", tt.field, body)
			}
		})
	}

	resp, body = e.do("DELETE", "/v1/account/ssh-keys/"+k.ID, e.KeyB, nil)
	wantError(t, resp, body, 404, api.CodeNotFound)
	if resp, body := e.do("DELETE", "/v1/account/ssh-keys/"+k.ID, e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("remove: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("DELETE", "/v1/account/ssh-keys/"+k.ID, e.KeyA, nil)
	wantError(t, resp, body, 404, api.CodeNotFound)
	// Removed, the key may be registered again, by anyone.
	if resp, body := e.do("POST", "/v1/account/ssh-keys", e.KeyB, api.AddSSHKeyRequest{PublicKey: line, Name: "b's"}); resp.StatusCode != 201 {
		t.Errorf("re-add after removal: %d %s", resp.StatusCode, body)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{Limits: server.Limits{AccountConcurrent: 3, MonthlySandboxHours: 10}})
	get := func(key string) api.Usage {
		t.Helper()
		resp, body := e.do("GET", "/v1/usage", key, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("usage: %d %s", resp.StatusCode, body)
		}
		var u api.Usage
		mustUnmarshal(t, body, &u)
		return u
	}
	setClock(e.clock, time.Date(2026, 3, 15, 10, 0, 0, 0, time.UTC)) // far from a month's turn
	intp := func(i int) *int { return &i }
	floatp := func(f float64) *float64 { return &f }
	if diff := cmp.Diff(api.Usage{MonthlySandboxHoursLimit: floatp(10), ConcurrentSandboxesLimit: intp(3)}, get(e.KeyA)); diff != "" {
		t.Errorf("fresh usage (-want +got):\n%s", diff)
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.create(e.KeyA, api.CreateSandboxRequest{})
	e.clock.Advance(90 * time.Minute)
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(30 * time.Minute)
	// One ran 1.5 h and is gone; the other has run 2 h and still runs.
	want := api.Usage{MonthlySandboxHoursUsed: 3.5, MonthlySandboxHoursLimit: floatp(10), ConcurrentSandboxes: 1, ConcurrentSandboxesLimit: intp(3)}
	if diff := cmp.Diff(want, get(e.KeyA)); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if u := get(e.KeyB); u.ConcurrentSandboxes != 0 || u.MonthlySandboxHoursUsed != 0 {
		t.Errorf("B's usage = %+v, want none of A's", u)
	}

	// No limits configured: the limits are null.
	open := newEnv(t, server.Config{})
	resp, body := open.do("GET", "/v1/usage", open.KeyA, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"monthly_sandbox_hours_limit":null`) ||
		!strings.Contains(string(body), `"concurrent_sandboxes_limit":null`) {
		t.Errorf("usage without limits = %d %s, want null limits", resp.StatusCode, body)
	}
}

// TestBootstrapAccountHasNoPassword: local mode's account logs in with
// its key only.
func TestBootstrapAccountHasNoPassword(t *testing.T) {
	t.Parallel()
	key := model.NewAPIKey()
	e := newEnv(t, server.Config{BootstrapAPIKey: key})
	if err := e.Server.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("POST", "/v1/auth/login", "", api.Credentials{Email: server.DefaultBootstrapEmail, Password: ""})
	wantError(t, resp, body, 422, api.CodeValidation)
	resp, body = e.do("POST", "/v1/auth/login", "", api.Credentials{Email: server.DefaultBootstrapEmail, Password: "guess1234"})
	wantError(t, resp, body, 401, api.CodeInvalidCredentials)
	// Its admin key manages keys.
	k := e.newKey(key, "boxkite-cli", "")
	if resp, _ := e.do("GET", "/v1/account", k.Key, nil); resp.StatusCode != 200 {
		t.Errorf("the new key does not work: %d", resp.StatusCode)
	}
}
