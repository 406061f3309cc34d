package cli

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestSnapshotRefs: restore, get and rm take a snapshot's id, a unique
// prefix of it or its label, as `boxkite session restore 7c1e` (restore's
// example) promises; the prefix went to the server as typed, which
// answered 404.
func TestSnapshotRefs(t *testing.T) {
	home := isolate(t)
	const id = "7c1e0000-0000-4000-8000-000000000001"
	var (
		mu   sync.Mutex
		hits []string
	)
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.Method+" "+r.PathValue("id"))
		mu.Unlock()
		switch r.Method {
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case http.MethodPost:
			replyJSON(201, api.Sandbox{ID: "new1"})(w, r)
		default:
			replyJSON(200, api.Snapshot{ID: r.PathValue("id")})(w, r)
		}
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/snapshots": replyJSON(200, []api.Snapshot{
			{ID: id, Label: "base"}, {ID: "9a000000-0000-4000-8000-000000000002", Label: "twin"}, {ID: "9b000000-0000-4000-8000-000000000003", Label: "twin"},
		}),
		"GET /v1/snapshots/{id}":          record,
		"DELETE /v1/snapshots/{id}":       record,
		"POST /v1/snapshots/{id}/restore": record,
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	for _, args := range [][]string{
		{"session", "restore", "7c1e", "--label", "retry"},
		{"session", "restore", "base"},
		{"snapshots", "get", "7c1e"},
		{"snapshots", "rm", "base", "--yes"},
	} {
		if r := runCLI(t, "", args...); r.code != 0 {
			t.Errorf("%v: %+v", args, r)
		}
	}
	want := []string{"POST " + id, "POST " + id, "GET " + id, "DELETE " + id}
	if !slices.Equal(hits, want) {
		t.Errorf("requests %q, want %q", hits, want)
	}
	// A label two snapshots share is ambiguous: exit 2, naming both.
	if r := runCLI(t, "", "session", "restore", "twin"); r.code != exitUsage || !strings.Contains(r.stderr, "matches 2 snapshots") {
		t.Errorf("restore twin: %+v, want exit %d naming both", r, exitUsage)
	}
}
