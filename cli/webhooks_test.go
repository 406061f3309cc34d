package cli

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
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
