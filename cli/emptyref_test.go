package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestEmptyRefRefused: an empty reference ("" from an unset shell
// variable) is a usage error before any request about an item. It is a
// prefix of every id, so 'session get ""' showed the only sandbox and
// 'kill ""' stopped the only process; elsewhere it reached the server as
// a request for the collection's path ("no route", or "method not
// allowed" for 'session restore ""'). The fake API answers only the
// lists, each with one item: any other request fails the test.
func TestEmptyRefRefused(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes":       replyJSON(200, []api.Sandbox{{ID: "3f2a0000-0000-4000-8000-000000000001", Status: api.StatusActive}}),
		"GET /v1/images":          replyJSON(200, []api.Image{{ID: "1a2b0000-0000-4000-8000-000000000002"}}),
		"GET /v1/volumes":         replyJSON(200, []api.Volume{{ID: "5e6f0000-0000-4000-8000-000000000003"}}),
		"GET /v1/snapshots":       replyJSON(200, []api.Snapshot{{ID: "7c1e0000-0000-4000-8000-000000000004"}}),
		"GET /v1/webhooks":        replyJSON(200, []api.Webhook{{ID: "9d8c0000-0000-4000-8000-000000000005"}}),
		"GET /v1/mcp-connections": replyJSON(200, []api.MCPConnection{{ID: "4b3a0000-0000-4000-8000-000000000006", Label: "gh"}}),
		"GET /v1/api-keys":        replyJSON(200, []api.APIKey{{ID: "k1", Name: "ci", Prefix: "bxk_live_ci"}}),
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	for _, args := range [][]string{
		{"session", "get", ""},
		{"session", "rm", "", "--yes"},
		{"session", "extend", "", "--lifetime", "1h"},
		{"session", "restore", ""},
		{"kill", "", "-s", "3f2a"},
		{"logs", "", "-s", "3f2a"},
		{"images", "get", ""},
		{"images", "rm", "", "--yes"},
		{"volumes", "get", ""},
		{"snapshots", "rm", "", "--yes"},
		{"webhooks", "get", ""},
		{"webhooks", "deliveries", ""},
		{"mcp-connections", "rm", "", "--yes"},
		{"keys", "rm", "", "--yes"},
		{"secrets", "rm", "", "--yes"},
	} {
		r := runCLI(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, " is empty\nhint: ") {
			t.Errorf("%q: exit %d, stderr %q; want %d and the empty reference refused with a hint", args, r.code, r.stderr, exitUsage)
		}
	}
}
