package console_test

import (
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestSignInOverSession: signing in (with a password or a link) in a
// browser that holds a session revokes that session's key, as signing out
// does, so a copy of the old cookie is worth nothing; a failed sign-in
// leaves it, and another browser's session of the account is not touched.
func TestSignInOverSession(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "ada@example.com", "correct horse")
	other := newBrowser(t, srv.BaseURL)
	other.signIn("ada@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)
	first := b.signIn("ada@example.com", "correct horse")
	firstCookie := b.cookie

	resp, body := b.do("POST", "/ui/session", api.Credentials{Email: "ada@example.com", Password: "wrong password"})
	if resp.StatusCode != http.StatusUnauthorized || b.cookie != firstCookie {
		t.Fatalf("wrong password over a session: %d %s, cookie %v", resp.StatusCode, body, b.cookie)
	}
	wantSession(t, b, http.StatusOK, "after a failed sign-in")

	second := b.signIn("ada@example.com", "correct horse")
	if second.KeyID == first.KeyID {
		t.Fatalf("the second sign-in kept the key %s", first.KeyID)
	}
	wantSession(t, b, http.StatusOK, "the new session")
	wantSession(t, other, http.StatusOK, "another browser's session")
	secondCookie := b.cookie
	b.cookie = firstCookie
	wantSession(t, b, http.StatusUnauthorized, "the replaced cookie, replayed")

	// A link opened over a session replaces it too.
	b.cookie = secondCookie
	resp, body = apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/ui/links", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	var link struct{ Path string }
	mustJSON(t, body, &link)
	if resp, _ := b.do("GET", link.Path, nil, "Origin", ""); resp.StatusCode != http.StatusSeeOther || b.cookie == secondCookie {
		t.Fatalf("open link: %d, cookie %v", resp.StatusCode, b.cookie)
	}
	wantSession(t, b, http.StatusOK, "the link's session")
	b.cookie = secondCookie
	wantSession(t, b, http.StatusUnauthorized, "the cookie a link replaced, replayed")
	wantSession(t, other, http.StatusOK, "another browser's session, after the link")
}

// wantSession checks what GET /ui/session answers b.
func wantSession(t *testing.T, b *browser, status int, what string) {
	t.Helper()
	if resp, body := b.do("GET", "/ui/session", nil); resp.StatusCode != status {
		t.Errorf("%s: GET /ui/session = %d %s, want %d", what, resp.StatusCode, body, status)
	}
}
