package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

func TestSignupSavesKey(t *testing.T) {
	home := isolate(t)
	var mu sync.Mutex
	var got api.Credentials
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/auth/signup": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			json.NewDecoder(r.Body).Decode(&got)
			mu.Unlock()
			replyJSON(201, api.TokenResponse{AccessToken: "eyJ.token.sig", TokenType: "bearer", Account: api.Account{Email: "ada@example.com"}})(w, r)
		},
		"POST /v1/api-keys": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateAPIKeyRequest
			json.NewDecoder(r.Body).Decode(&req)
			if r.Header.Get("Authorization") != "Bearer eyJ.token.sig" || req.Name != "laptop" || req.Role != api.RoleAdmin {
				t.Errorf("create key: auth %q, body %+v", r.Header.Get("Authorization"), req)
			}
			replyJSON(201, api.APIKeyCreated{APIKey: api.APIKey{Name: req.Name, Prefix: "bxk_live_abcdefgh"}, Key: "bxk_live_secret"})(w, r)
		},
	})
	res := runCLI(t, "pw from stdin\n", "signup", "--url", srv.URL, "--email", "ada@example.com", "--key-name", "laptop")
	if res.code != 0 {
		t.Fatalf("signup exited %d: %s", res.code, res.stderr)
	}
	if got.Email != "ada@example.com" || got.Password != "pw from stdin" {
		t.Errorf("server got %+v, want the password from stdin's first line", got)
	}
	fc, err := readFileConfig(filepath.Join(home, hostedFile))
	if err != nil {
		t.Fatal(err)
	}
	if fc.BaseURL != srv.URL || fc.APIKey != "bxk_live_secret" {
		t.Errorf("config.toml = %+v, want the URL and the new key", fc)
	}
	if !strings.Contains(res.stderr, "signed up as ada@example.com") || strings.Contains(res.stdout+res.stderr, "bxk_live_secret") {
		t.Errorf("stdout %q stderr %q: want a note that does not show the key", res.stdout, res.stderr)
	}
}

func TestCredentialCommandRefusals(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"plain http to a remote server", "", []string{"login", "--url", "http://boxkite.example.com", "--email", "a@b.c", "--password", "x"}, exitUsage, "plain http"},
		{"no email without a terminal", "", []string{"login", "--password", "x"}, exitUsage, "--email is required"},
		{"no password", "", []string{"signup", "--email", "a@b.c"}, exitUsage, "no password given"},
		{"empty key name", "", []string{"login", "--email", "a@b.c", "--password", "x", "--key-name", " "}, exitUsage, "--key-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			res := runCLI(t, tt.stdin, tt.args...) // no server: a request would fail differently
			if res.code != tt.code || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", res.code, res.stderr, tt.code, tt.want)
			}
		})
	}
}

func TestLogout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		account http.HandlerFunc
		revoked bool
	}{
		{"revokes the key", replyJSON(200, api.Account{APIKey: &api.APIKey{ID: "key-1"}}), true},
		{"key already unknown", replyJSON(401, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeInvalidAPIKey, Message: "invalid API key"}}), true},
		{"server error", replyJSON(500, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeInternal, Message: "boom"}}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			var deleted atomic.Bool
			srv := fakeAPI(t, map[string]http.HandlerFunc{
				"GET /v1/account": tt.account,
				"DELETE /v1/api-keys/key-1": func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Authorization") != "Bearer bxk_live_mine" {
						t.Errorf("revoked with %q", r.Header.Get("Authorization"))
					}
					deleted.Store(true)
					w.WriteHeader(http.StatusNoContent)
				},
			})
			path := filepath.Join(home, hostedFile)
			if err := updateFileConfig(path, func(fc *fileConfig) { fc.BaseURL, fc.APIKey = srv.URL, "bxk_live_mine" }); err != nil {
				t.Fatal(err)
			}
			res := runCLI(t, "", "logout")
			if res.code != 0 {
				t.Fatalf("logout exited %d: %s", res.code, res.stderr)
			}
			fc, _ := readFileConfig(path)
			if fc.APIKey != "" || fc.BaseURL != srv.URL {
				t.Errorf("config.toml after logout = %+v, want the URL kept and no key", fc)
			}
			if got := strings.HasSuffix(strings.TrimSpace(res.stderr), "and revoked"); got != tt.revoked {
				t.Errorf("stderr %q; revoked = %v, want %v", res.stderr, got, tt.revoked)
			}
			if tt.name == "server error" && !strings.Contains(res.stderr, "warning: could not revoke") {
				t.Errorf("stderr %q lacks the warning", res.stderr)
			}
			if deleted.Load() != (tt.name == "revokes the key") {
				t.Errorf("DELETE sent = %v", deleted.Load())
			}
		})
	}
}

func TestWhoamiText(t *testing.T) {
	hours, running := 1.25, 2
	for _, tt := range []struct {
		name string
		u    api.Usage
		want string
	}{
		{
			"limits",
			api.Usage{MonthlySandboxHoursUsed: 0.5, MonthlySandboxHoursLimit: &hours, ConcurrentSandboxes: 1, ConcurrentSandboxesLimit: &running},
			"email:                 ada@example.com\naccount:               acct-1\nkey:                   cli (admin, bxk_live_abcdefgh…)\nusage:                 0.5/1.25 sandbox-hours this month\nconcurrent sandboxes:  1/2\noutput scrubbing:      on\n",
		},
		{
			"no limits",
			api.Usage{MonthlySandboxHoursUsed: 3, ConcurrentSandboxes: 4},
			"email:                 ada@example.com\naccount:               acct-1\nkey:                   cli (admin, bxk_live_abcdefgh…)\nusage:                 3 sandbox-hours this month\nconcurrent sandboxes:  4 (no limit)\noutput scrubbing:      on\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			acct := &api.Account{
				ID: "acct-1", Email: "ada@example.com", CreatedAt: time.Now(), ScrubOutput: true,
				APIKey: &api.APIKey{Name: "cli", Role: "admin", Prefix: "bxk_live_abcdefgh"},
			}
			if err := writeWhoami(&b, acct, &tt.u); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("whoami =\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestReadPublicKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	app := &App{IO: IO{In: strings.NewReader("ssh-ed25519 AAAA from-stdin\n")}}
	for _, tt := range []struct {
		name, path, want string
		fails            bool
	}{
		{"file", write("k.pub", "ssh-ed25519 AAAA me\n\n"), "ssh-ed25519 AAAA me", false},
		{"stdin", "-", "ssh-ed25519 AAAA from-stdin", false},
		{"private key", write("k", "-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n"), "", true},
		{"too large", write("big.pub", strings.Repeat("a", maxPublicKeyFile+1)), "", true},
		{"missing", filepath.Join(dir, "nope.pub"), "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readPublicKey(app, tt.path)
			if (err != nil) != tt.fails || got != tt.want {
				t.Errorf("readPublicKey(%s) = %q, %v; want %q (fails %v)", tt.path, got, err, tt.want, tt.fails)
			}
		})
	}
}
