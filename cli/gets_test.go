package cli

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestGetViews: every noun's `get` shows its item as `session get` shows
// a sandbox, one "key: value" row a field, and prints the API's JSON only
// when asked (--json, -o json, --jq); images, volumes, webhooks and MCP
// connections printed JSON always. A webhook's signing secret is shown by
// neither, should a server send it; a label with a control character is
// escaped as a table cell is.
func TestGetViews(t *testing.T) {
	created := time.Now().Add(-72*time.Hour - 10*time.Minute).Truncate(time.Second) // "3d ago" for 50 minutes
	completed := created.Add(90 * time.Second)
	at := func(t time.Time) string { return t.Local().Format(time.RFC3339) }
	snapshot := api.Snapshot{
		ID: "7c1e0000-0000-4000-8000-000000000001", SessionID: "3f2a0000-0000-4000-8000-000000000009", Label: "base",
		Status: "completed", SizeBytes: 3 << 20, Method: "reflink", CreatedAt: created,
	}
	image := api.Image{
		ID: "1a2b0000-0000-4000-8000-000000000002", Label: "data", Status: api.ImageFailed, Source: api.ImageSourceBuild,
		Spec:          &api.ImageSpec{AptPackages: []string{"jq", "git=1:2.43"}, NPMPackages: []string{"phones-home==1.0.0"}},
		FailureReason: "the build reached registry.example.com", FailureCode: "image_build_egress_refused",
		FailureHint: "build without phones-home", CreatedAt: created, CompletedAt: &completed,
	}
	volume := api.Volume{ID: "5e6f0000-0000-4000-8000-000000000003", Label: "cache\x1b[31m", SizeGB: 2.5, Status: "ready", CreatedAt: created}
	webhook := api.Webhook{
		ID: "9d8c0000-0000-4000-8000-000000000004", URL: "https://hooks.example.com/boxkite",
		EventTypes: []string{api.EventSandboxCreated, api.EventSandboxLost}, Description: "ci", IsActive: true,
		CreatedAt: created, Secret: "whsec_leaked",
	}
	mcp := api.MCPConnection{ID: "4b3a0000-0000-4000-8000-000000000005", Label: "gh", CatalogID: "github", Host: "api.githubcopilot.com", CreatedAt: created}

	tests := []struct {
		name   string
		routes map[string]http.HandlerFunc
		args   []string // the get, by a reference its noun takes
		want   string   // the text view
		id     string   // the item's id, in its JSON
	}{
		{
			name: "snapshot by label",
			routes: map[string]http.HandlerFunc{
				"GET /v1/snapshots":      replyJSON(200, []api.Snapshot{snapshot}),
				"GET /v1/snapshots/{id}": replyJSON(200, snapshot),
			},
			args: []string{"snapshots", "get", "base"},
			want: "id:       7c1e0000-0000-4000-8000-000000000001\n" +
				"status:   completed\n" +
				"label:    base\n" +
				"sandbox:  3f2a0000-0000-4000-8000-000000000009\n" +
				"size:     3.0MiB\n" +
				"method:   reflink\n" +
				"created:  " + at(created) + " (3d ago)\n",
			id: snapshot.ID,
		},
		{
			name: "failed image build by id prefix",
			routes: map[string]http.HandlerFunc{
				"GET /v1/images":      replyJSON(200, []api.Image{image}),
				"GET /v1/images/{id}": replyJSON(200, image),
			},
			args: []string{"images", "get", "1a2b"},
			want: "id:            1a2b0000-0000-4000-8000-000000000002\n" +
				"status:        failed\n" +
				"label:         data\n" +
				"source:        build\n" +
				"base:          boxkite-default\n" +
				"apt packages:  jq git=1:2.43\n" +
				"npm packages:  phones-home==1.0.0\n" +
				"created:       " + at(created) + " (3d ago)\n" +
				"completed:     " + at(completed) + " (3d ago)\n" +
				"failure:       the build reached registry.example.com\n" +
				"code:          image_build_egress_refused\n" +
				"hint:          build without phones-home\n",
			id: image.ID,
		},
		{
			name: "volume by id",
			routes: map[string]http.HandlerFunc{
				"GET /v1/volumes":      replyJSON(200, []api.Volume{volume}),
				"GET /v1/volumes/{id}": replyJSON(200, volume),
			},
			args: []string{"volumes", "get", volume.ID},
			want: "id:       5e6f0000-0000-4000-8000-000000000003\n" +
				"status:   ready\n" +
				`label:    cache\x1b[31m` + "\n" +
				"size:     2.5 GiB\n" +
				"created:  " + at(created) + " (3d ago)\n",
			id: volume.ID,
		},
		{
			name: "webhook by id prefix, never sent",
			routes: map[string]http.HandlerFunc{
				"GET /v1/webhooks":      replyJSON(200, []api.Webhook{webhook}),
				"GET /v1/webhooks/{id}": replyJSON(200, webhook),
			},
			args: []string{"webhooks", "get", "9d8c"},
			want: "id:           9d8c0000-0000-4000-8000-000000000004\n" +
				"url:          https://hooks.example.com/boxkite\n" +
				"events:       sandbox.created sandbox.lost\n" +
				"format:       boxkite_v1\n" +
				"active:       yes\n" +
				"description:  ci\n" +
				"created:      " + at(created) + " (3d ago)\n" +
				"last sent:    never\n",
			id: webhook.ID,
		},
		{
			name: "MCP connection by label",
			routes: map[string]http.HandlerFunc{
				"GET /v1/mcp-connections":      replyJSON(200, []api.MCPConnection{mcp}),
				"GET /v1/mcp-connections/{id}": replyJSON(200, mcp),
			},
			args: []string{"mcp-connections", "get", "gh"},
			want: "id:       4b3a0000-0000-4000-8000-000000000005\n" +
				"label:    gh\n" +
				"catalog:  github\n" +
				"host:     api.githubcopilot.com\n" +
				"created:  " + at(created) + " (3d ago)\n",
			id: mcp.ID,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := isolate(t)
			srv := fakeAPI(t, tt.routes)
			writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

			r := runCLI(t, "", tt.args...)
			if r.code != 0 || r.stdout != tt.want {
				t.Errorf("%s: exit %d, stderr %q, stdout\n%s\nwant\n%s", strings.Join(tt.args, " "), r.code, r.stderr, r.stdout, tt.want)
			}
			for _, flags := range [][]string{{"--json"}, {"-o", "json"}, {"--json", "id,created_at"}, {"--jq", "."}} {
				args := append(append([]string(nil), tt.args...), flags...)
				r := runCLI(t, "", args...)
				var got struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got.ID != tt.id {
					t.Errorf("%s: exit %d, stderr %q, stdout %q (%v), want the item's JSON", strings.Join(args, " "), r.code, r.stderr, r.stdout, err)
				}
				if strings.Contains(r.stdout, "whsec_") || strings.Contains(r.stdout, "secret") {
					t.Errorf("%s shows the webhook's secret:\n%s", strings.Join(args, " "), r.stdout)
				}
			}
		})
	}
}
