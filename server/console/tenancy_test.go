package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestConsoleTenancy: a console session acts for its account only. Through
// /ui/api/v1, another account's sandbox and API key answer exactly as ones
// that do not exist (404 not_found, the same message), for reads, changes
// and what is made under a sandbox; the session's lists show none of them;
// and the other account's sandbox is unchanged after. The API's own
// matrix is server's TestCrossTenantMatrix; this is the console's door.
func TestConsoleTenancy(t *testing.T) {
	srv := servertest.New(t)
	resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/v1/sandboxes", api.CreateSandboxRequest{Label: "a-secret-label"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("A's sandbox: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustJSON(t, body, &sb)
	_, body = apiCall(t, srv.BaseURL, srv.APIKey, "GET", "/v1/account", nil)
	var acct api.Account
	mustJSON(t, body, &acct)

	signup(t, srv.BaseURL, "b-console@example.com", "b-console-password")
	b := newBrowser(t, srv.BaseURL)
	b.signIn("b-console@example.com", "b-console-password")

	const none = "0b9e0a5e-0000-4000-8000-000000000000"
	rows := []struct {
		method, path, id string
		body             any
	}{
		{"GET", "/ui/api/v1/sandboxes/ID", sb.ID, nil},
		{"DELETE", "/ui/api/v1/sandboxes/ID", sb.ID, nil},
		{"POST", "/ui/api/v1/sandboxes/ID/extend", sb.ID, api.ExtendSandboxRequest{LifetimeMinutes: 5}},
		{"POST", "/ui/api/v1/sandboxes/ID/pause", sb.ID, api.PauseSandboxRequest{}},
		{"POST", "/ui/api/v1/sandboxes/ID/exec", sb.ID, api.ExecRequest{Command: "id"}},
		{"GET", "/ui/api/v1/sandboxes/ID/files/raw?path=/workspace/x", sb.ID, nil},
		{"POST", "/ui/api/v1/sandboxes/ID/preview/8000", sb.ID, api.CreatePreviewRequest{}},
		{"GET", "/ui/api/v1/sandboxes/ID/previews", sb.ID, nil},
		{"POST", "/ui/api/v1/sandboxes/ID/snapshots", sb.ID, api.CreateSnapshotRequest{}},
		{"POST", "/ui/api/v1/sandboxes/ID/takeover-token", sb.ID, nil},
		{"GET", "/ui/api/v1/sandboxes/ID/log", sb.ID, nil},
		{"DELETE", "/ui/api/v1/api-keys/ID", acct.APIKey.ID, nil},
	}
	for _, row := range rows {
		var msgs [2]string
		for i, id := range []string{row.id, none} {
			resp, body := b.do(row.method, strings.Replace(row.path, "ID", id, 1), row.body)
			if resp.StatusCode != http.StatusNotFound || errCode(t, body) != api.CodeNotFound {
				t.Errorf("%s %s for %s: %d %s, want 404 not_found", row.method, row.path, id, resp.StatusCode, body)
			}
			var env api.ErrorEnvelope
			mustJSON(t, body, &env)
			if env.Error != nil {
				msgs[i] = strings.ReplaceAll(env.Error.Message+" | "+env.Error.Hint, id, "ID")
			}
		}
		if msgs[0] != msgs[1] {
			t.Errorf("%s %s: A's resource answers %s, none %s", row.method, row.path, msgs[0], msgs[1])
		}
	}
	for _, list := range []string{"/ui/api/v1/sandboxes", "/ui/api/v1/api-keys", "/ui/api/v1/snapshots"} {
		resp, body := b.do("GET", list, nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), sb.ID) ||
			strings.Contains(string(body), "a-secret-label") || strings.Contains(string(body), acct.APIKey.ID) {
			t.Errorf("GET %s: %d %s, want B's own list without A's", list, resp.StatusCode, body)
		}
	}
	resp, body = apiCall(t, srv.BaseURL, srv.APIKey, "GET", "/v1/sandboxes/"+sb.ID, nil)
	var got api.Sandbox
	mustJSON(t, body, &got)
	if resp.StatusCode != http.StatusOK || got.Status != api.StatusActive || !got.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Errorf("A's sandbox after B's console: %d %s", resp.StatusCode, body)
	}
}
