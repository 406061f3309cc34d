package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
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
