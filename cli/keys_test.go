package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestKeysRmRevokedKey: revoking a key that is revoked already says so
// (exit 3, as for no key, and nothing is sent), instead of that it does
// not exist, which 'keys ls --all' contradicts.
func TestKeysRmRevokedKey(t *testing.T) {
	isolate(t)
	at := time.Date(2026, 12, 5, 21, 0, 0, 0, time.UTC)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/api-keys": replyJSON(200, []api.APIKey{
			{ID: "c683638d-265a-44f2-a963-733db4e5c61c", Name: "ci", Role: api.RoleMember, RevokedAt: &at},
		}),
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	for _, ref := range []string{"c683638d-265a-44f2-a963-733db4e5c61c", "ci"} {
		r := runCLI(t, "", "keys", "rm", ref, "--yes")
		want := "error: api key c683638d-265a-44f2-a963-733db4e5c61c (ci) was revoked already, at 2026-12-05T21:00:00Z\nhint: 'boxkite keys ls' lists"
		if r.code != exitNotFound || !strings.Contains(r.stderr, want) {
			t.Errorf("keys rm %s: exit %d, stderr %q; want exit 3 and %q", ref, r.code, r.stderr, want)
		}
	}
	if r := runCLI(t, "", "keys", "rm", "nope", "--yes"); r.code != exitNotFound || !strings.Contains(r.stderr, "api key nope not found") {
		t.Errorf("keys rm nope: exit %d, stderr %q; want exit 3, not found", r.code, r.stderr)
	}
}
