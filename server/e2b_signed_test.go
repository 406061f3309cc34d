package server_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
)

// e2bSignature is the E2B SDK's signature of a signed /files URL
// (getSignature in the SDK).
func e2bSignature(path, op, user, token, exp string) string {
	s := path + ":" + op + ":" + user + ":" + token
	if exp != "" {
		s += ":" + exp
	}
	sum := sha256.Sum256([]byte(s))
	return "v1_" + strings.TrimRight(base64.StdEncoding.EncodeToString(sum[:]), "=")
}

// TestE2BSignedURLs: a signed download URL works on the shared host and
// on its sandbox's own host (49983-<id>.<domain>), not on another
// sandbox's host; an expired one is refused saying so; revoking the API
// key its token was issued to ends every URL signed with it, those
// without an expiration too.
func TestE2BSignedURLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	e.Sidecar.Route("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "content") })
	key := e.newKey(e.KeyA, "signer", "admin")
	create := func() (id, token string) {
		status, body := e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", http.Header{"X-API-Key": {key.Key}}, `{"templateID":"base","timeout":600}`)
		var sb struct{ SandboxID, EnvdAccessToken string }
		if status != http.StatusCreated || json.Unmarshal(body, &sb) != nil || sb.EnvdAccessToken == "" {
			t.Fatalf("create: %d %s", status, body)
		}
		return sb.SandboxID, sb.EnvdAccessToken
	}
	id, tok := create()
	other, _ := create()
	signed := func(exp string) string {
		q := url.Values{"path": {"/workspace/a.txt"}, "signature": {e2bSignature("/workspace/a.txt", "read", "", tok, exp)}}
		if exp != "" {
			q.Set("signature_expiration", exp)
		}
		return "/files?" + q.Encode()
	}
	get := func(host, target string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, e.URL+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	noExpiry := signed("")
	later := signed(strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	for _, c := range []struct{ name, host, target string }{
		{"shared host", "", noExpiry},
		{"shared host, expiring later", "", later},
		{"its sandbox's host", "49983-" + id + ".sandbox.example.test", noExpiry},
	} {
		if status, body := get(c.host, c.target); status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", c.name, status, body)
		}
	}
	if status, body := get("49983-"+other+".sandbox.example.test", noExpiry); status != http.StatusUnauthorized {
		t.Errorf("another sandbox's host: %d %s, want 401", status, body)
	}
	status, body := get("", signed(strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)))
	if status != http.StatusUnauthorized || !strings.Contains(body, "expired at") {
		t.Errorf("expired: %d %s, want 401 saying it expired", status, body)
	}

	if resp, body := e.do("DELETE", "/v1/api-keys/"+key.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke the key: %d %s", resp.StatusCode, body)
	}
	for _, target := range []string{noExpiry, later} {
		if status, body := get("", target); status != http.StatusUnauthorized {
			t.Errorf("after the key's revocation, %s: %d %s, want 401", target, status, body)
		}
	}
}
