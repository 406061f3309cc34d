package console_test

import (
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/server/servertest"
)

// TestAPIPathNotClean: a console API path with an empty element, "." or
// ".." is redirected to its clean form under /ui/api/, where the session's
// cookie goes. Before, the API's mux answered the path the console passed
// on, and its redirect (to /v1/…) left the console: the browser followed
// it without the cookie and got 401.
func TestAPIPathNotClean(t *testing.T) {
	srv := servertest.New(t)
	signup(t, srv.BaseURL, "ada@example.com", "correct horse")
	b := newBrowser(t, srv.BaseURL)
	b.signIn("ada@example.com", "correct horse")
	for path, want := range map[string]string{
		"/ui/api/v1//sandboxes":                         "/ui/api/v1/sandboxes",
		"/ui/api/v1/sandboxes/./":                       "/ui/api/v1/sandboxes/",
		"/ui/api/v1/sandboxes/x/../../api-keys?limit=1": "/ui/api/v1/api-keys?limit=1",
		"/ui/api/v1/../../v1/sandboxes":                 "/ui/api/",
	} {
		resp, body := b.do("GET", path, nil)
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != want {
			t.Errorf("GET %s: %d, Location %q (%s); want 307 to %s", path, resp.StatusCode, resp.Header.Get("Location"), body, want)
		}
	}
	// A clean path is passed on as before.
	if resp, body := b.do("GET", "/ui/api/v1/sandboxes", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /ui/api/v1/sandboxes: %d %s", resp.StatusCode, body)
	}
}
