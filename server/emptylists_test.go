package server_test

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestEmptyListsAreArrays: each list route answers [] for a list with
// nothing in it, never null, however its store reads the rows (the
// store's lists all answer an empty slice; a handler may also make its
// own). The list of images has its own (servertest's checkOtherTenant).
func TestEmptyListsAreArrays(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	e := newEnvWithStore(t, server.Config{Secrets: testSecrets(t, st), Operators: []string{"b@example.com"}}, st)
	sb := e.create(e.KeyB, api.CreateSandboxRequest{})
	org := e.newOrg(e.KeyB, "empty-lists")
	resp, body := e.do("POST", "/v1/webhooks", e.KeyB, api.CreateWebhookRequest{URL: "https://hook.example.com/in", EventTypes: []string{api.EventSandboxCreated}})
	if resp.StatusCode != 201 {
		t.Fatalf("create webhook: %d %s", resp.StatusCode, body)
	}
	var hook api.Webhook
	mustUnmarshal(t, body, &hook)
	for _, tt := range []struct{ key, path string }{
		{e.KeyB, "/v1/snapshots"},
		{e.KeyB, sandboxPath(sb.ID, "/snapshots")},
		{e.KeyB, "/v1/volumes"},
		{e.KeyB, "/v1/mcp-connections"},
		{e.KeyB, "/v1/secrets"},
		{e.KeyB, sandboxPath(sb.ID, "/previews")},
		{e.KeyB, "/v1/webhooks/" + hook.ID + "/deliveries"},
		{e.KeyB, "/v1/account/ssh-keys"},
		{e.KeyB, "/v1/organizations/" + org.ID + "/invites"},
		{e.KeyB, "/v1/admin/audit-log?account_id=" + model.NewID()},
		{e.KeyA, "/v1/organizations"},
		{e.KeyA, "/v1/webhooks"},
		{e.KeyA, "/v1/sandboxes"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := e.do("GET", tt.path, tt.key, nil)
			if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
				t.Errorf("GET %s = %d %s, want 200 []", tt.path, resp.StatusCode, body)
			}
		})
	}
}
