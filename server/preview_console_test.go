package server_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/console"
)

// TestConsoleNotOnPreviewHosts: /ui/ on a preview's host is the app's
// path like any other, never the web console. The console used to answer
// /ui/ whatever the host, so it ran in the origin of any tenant's preview
// (8080-<id>.localhost, or under the preview domain): a page of the app
// opening /ui/ there shared the console's origin, so its scripts could
// read the sign-in form and, once a visitor signed in there, the session's
// pages and CSRF token.
func TestConsoleNotOnPreviewHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	ui, err := console.New(console.Config{API: e.Server, LinkKey: e.Server.ConsoleLinkKey})
	if err != nil {
		t.Fatal(err)
	}
	e.Server.MountConsole(ui) // before any request, as boxkite-server does
	e.Sidecar.Route("/preview/{port}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app path=/%s", r.PathValue("path"))
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	p := createPreview(t, e, e.KeyA, sb.ID, 8080, 0)
	addr := strings.TrimPrefix(e.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	c := previewClient(t, addr)

	// No preview cookie yet: the preview's refusal, not the console.
	resp, body := get(t, c, fmt.Sprintf("http://8080-%s.localhost:%s/ui/", sb.ID, port))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, string(api.CodePreviewUnauthorized)) {
		t.Errorf("/ui/ on the preview's host without its token: %d %.80q, want 401 %s", resp.StatusCode, body, api.CodePreviewUnauthorized)
	}
	if resp, _ := get(t, c, p.URL); resp.StatusCode != http.StatusOK {
		t.Fatalf("preview: %d", resp.StatusCode)
	}
	for _, path := range []string{"/ui/", "/ui", "/ui/session"} {
		resp, body := get(t, c, fmt.Sprintf("http://8080-%s.localhost:%s%s", sb.ID, port, path))
		if resp.StatusCode != http.StatusOK || body != "app path="+path {
			t.Errorf("%s on the preview's host: %d %.80q, want the app's answer", path, resp.StatusCode, body)
		}
	}
	// The console stays where it was.
	resp, body = get(t, c, e.URL+"/ui/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(body), "<!doctype html") {
		t.Errorf("/ui/ on the server's own host: %d %.80q, want the console", resp.StatusCode, body)
	}
}
