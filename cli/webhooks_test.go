package cli

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestWebhooksAddHECToken: --hec-token without --format splunk_hec exits
// 2 before any request; the token was stored and never sent.
func TestWebhooksAddHECToken(t *testing.T) {
	home := isolate(t)
	var posts atomic.Int32
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/webhooks": func(w http.ResponseWriter, r *http.Request) {
			posts.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	for _, format := range [][]string{nil, {"--format", "boxkite_v1"}} {
		args := append([]string{"webhooks", "add", "https://hooks.example.com/x", "--event", "sandbox.created", "--hec-token", "T"}, format...)
		if r := runCLI(t, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "hint: add --format splunk_hec") {
			t.Errorf("%v: %+v, want exit %d with a hint", args, r, exitUsage)
		}
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestWebhookDeliveriesMoreNote: webhooks deliveries says on stderr, as
// session ls does, that more deliveries follow the page it shows (the
// server's Link rel="next") and how to see them; not when none follow,
// and never with --json.
func TestWebhookDeliveriesMoreNote(t *testing.T) {
	isolate(t)
	const total = 45
	now := time.Now().UTC()
	ds := make([]any, total)
	for i := range total {
		ds[i] = api.WebhookDelivery{ID: fmt.Sprintf("dl%03d", i), EventType: api.EventAuditLogEntry, Status: "delivered", CreatedAt: now.Add(-time.Duration(i) * time.Second)}
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/webhooks": replyJSON(200, []api.Webhook{{ID: "wh1"}}),
		"GET /v1/webhooks/{id}/deliveries": func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			from, _ := strconv.Atoi(q.Get("offset"))
			n, _ := strconv.Atoi(q.Get("limit"))
			page := ds[min(from, total):]
			if n < len(page) {
				page = page[:n]
				w.Header().Set("Link", fmt.Sprintf(`</v1/webhooks/wh1/deliveries?cursor=c%d&limit=%d>; rel="next"`, from+n, n))
			}
			replyJSON(200, page)(w, r)
		},
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_secret")
	for _, tt := range []struct {
		args []string
		rows int
		note string
	}{
		{nil, 20, "showing the newest 20; there are more: 'boxkite webhooks deliveries wh1 --limit 40' shows more, 'boxkite webhooks deliveries wh1 --offset 20' shows the next ones\n"},
		{[]string{"--offset", "20"}, 20, "showing 20 after the newest 20; there are more: 'boxkite webhooks deliveries wh1 --offset 40' shows the next ones\n"},
		{[]string{"--offset", "40"}, 5, ""},
		{[]string{"--limit", "45"}, 45, ""},
		{[]string{"--limit", "10", "--json"}, 10, ""},
	} {
		r := runCLI(t, "", append([]string{"webhooks", "deliveries", "wh1"}, tt.args...)...)
		if rows := strings.Count(r.stdout, "dl0"); r.code != 0 || rows != tt.rows || r.stderr != tt.note {
			t.Errorf("deliveries %v: exit %d, %d rows, stderr %q; want 0, %d, %q", tt.args, r.code, rows, r.stderr, tt.rows, tt.note)
		}
	}
	// A limit the API refuses is a usage error here, not the default 20.
	for _, args := range [][]string{{"--limit", "0"}, {"--limit", "101"}, {"--offset", "-1"}} {
		r := runCLI(t, "", append([]string{"webhooks", "deliveries", "wh1"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "hint: pass --limit 1 to 100") {
			t.Errorf("deliveries %v: exit %d, stderr %q; want %d and a hint", args, r.code, r.stderr, exitUsage)
		}
	}
}

// TestWebhookAndMCPRefs: every command taking a webhook's or an MCP
// connection's id takes, as images, volumes and snapshots do, a unique
// prefix of it or what ls shows beside it (the URL, the label) and sends
// the whole id; an ambiguous prefix is a usage error naming each match,
// before any request about one; an unknown reference reaches the server,
// whose 404 is exit 3 with a hint.
func TestWebhookAndMCPRefs(t *testing.T) {
	home := isolate(t)
	const (
		hookA = "9d8c0000-0000-4000-8000-000000000001"
		hookB = "9d8d0000-0000-4000-8000-000000000002"
		connA = "4b3a0000-0000-4000-8000-000000000003"
		connB = "4b3b0000-0000-4000-8000-000000000004"
	)
	hooks := []api.Webhook{
		{ID: hookA, URL: "https://hooks.example.com/a", EventTypes: []string{api.EventSandboxLost}},
		{ID: hookB, URL: "https://hooks.example.com/b", EventTypes: []string{api.EventSandboxLost}},
	}
	conns := []api.MCPConnection{{ID: connA, Label: "gh", CatalogID: "github"}, {ID: connB, Label: "notion", CatalogID: "notion"}}
	var (
		mu   sync.Mutex
		sent []string // the requests about one item, with its id
	)
	record := func(reply http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			sent = append(sent, r.Method+" "+r.URL.Path)
			mu.Unlock()
			if id := r.PathValue("id"); id != hookA && id != hookB && id != connA && id != connB {
				replyJSON(404, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeNotFound, Message: "not found"}})(w, r)
				return
			}
			reply(w, r)
		}
	}
	delivery := api.WebhookDelivery{ID: "dl1", EventType: "webhook.test", Status: "pending"}
	noContent := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/webhooks":                                       replyJSON(200, hooks),
		"GET /v1/webhooks/{id}":                                  record(replyJSON(200, hooks[0])),
		"DELETE /v1/webhooks/{id}":                               record(noContent),
		"GET /v1/webhooks/{id}/deliveries":                       record(replyJSON(200, []api.WebhookDelivery{delivery})),
		"POST /v1/webhooks/{id}/test":                            record(replyJSON(202, delivery)),
		"POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver": record(replyJSON(202, delivery)),
		"GET /v1/mcp-connections":                                replyJSON(200, conns),
		"GET /v1/mcp-connections/{id}":                           record(replyJSON(200, conns[0])),
		"DELETE /v1/mcp-connections/{id}":                        record(noContent),
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	unknown := "00000000-0000-4000-8000-000000000000"
	tests := []struct {
		args     []string
		code     int
		sent     string // the request made about the item, "" for none
		stderrRE string
	}{
		{[]string{"webhooks", "get", "9d8c"}, 0, "GET /v1/webhooks/" + hookA, ""},
		{[]string{"webhooks", "get", "https://hooks.example.com/b"}, 0, "GET /v1/webhooks/" + hookB, ""},
		{[]string{"webhooks", "get", hookB}, 0, "GET /v1/webhooks/" + hookB, ""},
		{[]string{"webhooks", "rm", "9d8d", "--yes"}, 0, "DELETE /v1/webhooks/" + hookB, ""},
		{[]string{"webhooks", "deliveries", "9d8c"}, 0, "GET /v1/webhooks/" + hookA + "/deliveries", ""},
		{[]string{"webhooks", "test", "9d8d"}, 0, "POST /v1/webhooks/" + hookB + "/test", ""},
		{[]string{"webhooks", "redeliver", "9d8c", "dl1"}, 0, "POST /v1/webhooks/" + hookA + "/deliveries/dl1/redeliver", ""},
		{[]string{"mcp-connections", "get", "gh"}, 0, "GET /v1/mcp-connections/" + connA, ""},
		{[]string{"mcp-connections", "get", "4b3b"}, 0, "GET /v1/mcp-connections/" + connB, ""},
		{[]string{"mcp-connections", "rm", "notion", "--yes"}, 0, "DELETE /v1/mcp-connections/" + connB, ""},
		{[]string{"mcp-connection", "rm", "4b3a", "--yes"}, 0, "DELETE /v1/mcp-connections/" + connA, ""},

		// Ambiguous: exit 2 naming both, nothing asked about either.
		{[]string{"webhooks", "get", "9d8"}, exitUsage, "", `^error: get webhook: "9d8" matches 2 webhooks: ` + hookA + ", " + hookB + "\nhint: use the full id\n$"},
		{[]string{"webhooks", "rm", "9d8", "--yes"}, exitUsage, "", `^error: remove webhook: "9d8" matches 2 webhooks: .*\nhint: `},
		{[]string{"webhooks", "deliveries", "9d8"}, exitUsage, "", `^error: list webhook deliveries: "9d8" matches 2 webhooks: .*\nhint: `},
		{[]string{"webhooks", "test", "9d8"}, exitUsage, "", `^error: test webhook: "9d8" matches 2 webhooks: .*\nhint: `},
		{[]string{"webhooks", "redeliver", "9d8", "dl1"}, exitUsage, "", `^error: redeliver webhook: "9d8" matches 2 webhooks: .*\nhint: `},
		{[]string{"mcp-connections", "get", "4b3"}, exitUsage, "", `^error: get MCP connection: "4b3" matches 2 MCP connections: ` + connA + ", " + connB + "\nhint: use the full id\n$"},
		{[]string{"mcp-connections", "rm", "4b3", "--yes"}, exitUsage, "", `^error: remove MCP connection: "4b3" matches 2 MCP connections: .*\nhint: `},

		// Unknown: the server's 404, with the CLI's hint.
		{[]string{"webhooks", "get", unknown}, exitNotFound, "GET /v1/webhooks/" + unknown, `(?m)^hint: list them with 'boxkite webhooks ls'$`},
		{[]string{"webhooks", "rm", unknown, "--yes"}, exitNotFound, "DELETE /v1/webhooks/" + unknown, `(?m)^hint: list them with 'boxkite webhooks ls'$`},
		{[]string{"mcp-connections", "get", "gitlab"}, exitNotFound, "GET /v1/mcp-connections/gitlab", `(?m)^hint: list them with 'boxkite mcp-connections ls'$`},
		{[]string{"mcp-connections", "rm", "gitlab", "--yes"}, exitNotFound, "DELETE /v1/mcp-connections/gitlab", `(?m)^hint: list them with 'boxkite mcp-connections ls'$`},
	}
	for _, tt := range tests {
		mu.Lock()
		sent = nil
		mu.Unlock()
		r := runCLI(t, "", tt.args...)
		mu.Lock()
		got := strings.Join(sent, "; ")
		mu.Unlock()
		if r.code != tt.code || got != tt.sent || !regexp.MustCompile(tt.stderrRE).MatchString(r.stderr) {
			t.Errorf("%s: exit %d, sent %q, stderr %q; want exit %d, sent %q, stderr matching %q",
				strings.Join(tt.args, " "), r.code, got, r.stderr, tt.code, tt.sent, tt.stderrRE)
		}
	}
}

// TestWebhookSecretNotAField: the signing secret, which only add's answer
// has, is not among the fields of webhooks ls and get: asking for it is
// the unknown-field usage error listing the real ones, before any
// request. add still offers it.
func TestWebhookSecretNotAField(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, nil) // any request fails the test
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	const fields = "id, url, event_types, description, is_active, payload_format, created_at, last_triggered_at, created_by"
	for _, args := range [][]string{
		{"webhooks", "ls", "--json", "secret"},
		{"webhooks", "ls", "--json", "id,secret"},
		{"webhooks", "get", "9d8c", "--json=secret"},
	} {
		r := runCLI(t, "", args...)
		want := "error: unknown JSON field \"secret\"\nhint: available fields: " + fields + "\n"
		if r.code != exitUsage || r.stderr != want || r.stdout != "" {
			t.Errorf("%s: %+v, want exit %d and stderr %q", strings.Join(args, " "), r, exitUsage, want)
		}
	}
	root := NewRoot(NewApp(IO{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}, "test"))
	for _, path := range [][]string{{"webhooks", "ls"}, {"webhooks", "get"}, {"webhooks", "add"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		has := slices.Contains(strings.Split(cmd.Annotations[annotationJSONFields], ","), "secret")
		if want := path[1] == "add"; has != want || strings.Contains(cmd.Long, ", secret.") != want {
			t.Errorf("%s: secret among the JSON fields: %v (help: %q), want %v", cmd.CommandPath(), has, cmd.Long, want)
		}
	}
}
