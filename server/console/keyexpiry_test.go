package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestConsoleKeysExpire: a sign-in's key expires on the server with its
// cookie (SessionTTL) and an unopened link's key with its link (LinkTTL),
// so neither outlives them until the account's next sign-in.
func TestConsoleKeysExpire(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "ada@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)
	before := time.Now()
	info := b.signIn("ada@example.com", "correct horse")
	after := time.Now()
	resp, body := b.do("GET", "/ui/api/v1/api-keys", nil)
	var keys []api.APIKey
	mustJSON(t, body, &keys)
	if resp.StatusCode != http.StatusOK || len(keys) != 1 || keys[0].ID != info.KeyID {
		t.Fatalf("GET /ui/api/v1/api-keys = %d %s", resp.StatusCode, body)
	}
	wantWithin(t, "the session key", keys[0].ExpiresAt, before.Add(console.DefaultSessionTTL), after.Add(console.DefaultSessionTTL))

	before = time.Now()
	resp, body = apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/ui/links", nil)
	after = time.Now()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	_, body = apiCall(t, srv.BaseURL, srv.APIKey, "GET", "/v1/api-keys", nil)
	keys = nil
	mustJSON(t, body, &keys)
	n := 0
	for _, k := range keys {
		switch k.Name {
		case console.LinkKeyName:
			n++
			wantWithin(t, "the link key", k.ExpiresAt, before.Add(console.DefaultLinkTTL), after.Add(console.DefaultLinkTTL))
		case console.SessionKeyName:
			t.Errorf("a session key before the link was opened: %+v", k)
		}
	}
	if n != 1 {
		t.Fatalf("%d link keys in %s", n, body)
	}
}

// wantWithin checks that at is in [lo, hi], give or take the second the
// console rounds up to.
func wantWithin(t *testing.T, what string, at *time.Time, lo, hi time.Time) {
	t.Helper()
	if at == nil || at.Before(lo.Add(-time.Second)) || at.After(hi.Add(time.Second)) {
		t.Errorf("%s expires at %v, want between %v and %v", what, at, lo, hi)
	}
}
