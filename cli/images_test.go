package cli

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// TestImagesAudit reads a build's whole audit log, page by page, as a
// table and as JSON; a missing image says where the ids are.
func TestImagesAudit(t *testing.T) {
	home := isolate(t)
	entries := make([]api.LogEntry, api.MaxLogLimit+3)
	for i := range entries {
		entries[i] = api.LogEntry{
			ID: strconv.Itoa(i + 1), SessionID: "img1", Source: api.LogSourceImageBuild, Operation: "egress_allow",
			Detail: json.RawMessage(`{"host":"registry.npmjs.org"}`), StartedAt: time.Unix(1764496800, 0),
		}
	}
	entries[len(entries)-1].Operation, entries[len(entries)-1].Detail = "image_build_failed", json.RawMessage(`{"code":"image_build_egress_refused"}`)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		// By label, as images ls shows it.
		"GET /v1/images": replyJSON(200, []api.Image{{ID: "img1", Label: "agent"}}),
		"GET /v1/images/{id}/log": func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("id") != "img1" {
				replyJSON(404, api.ErrorEnvelope{Error: &api.Error{Code: api.CodeNotFound, Message: "image not found"}})(w, r)
				return
			}
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			end := min(offset+limit, len(entries))
			replyJSON(200, api.LogPage{Entries: entries[offset:end], Total: len(entries), Offset: offset, Limit: limit})(w, r)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	r := runCLI(t, "", "images", "audit", "agent")
	rows := fields(r.stdout)
	if r.code != 0 || len(rows) != len(entries)+1 || rows[0][2] != "OPERATION" || !strings.Contains(r.stdout, "image_build_egress_refused") {
		t.Errorf("images audit: code %d, %d rows, want %d and the failure:\n%s%s", r.code, len(rows), len(entries)+1, r.stdout, r.stderr)
	}
	r = runCLI(t, "", "images", "audit", "img1", "--json")
	var page api.LogPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Entries) != len(entries) || page.Total != len(entries) {
		t.Errorf("images audit --json: %v, %d entries of %d", err, len(page.Entries), page.Total)
	}
	r = runCLI(t, "", "images", "audit", "nope")
	if r.code != exitNotFound || !strings.Contains(r.stderr, "hint: list them with 'boxkite images ls'") {
		t.Errorf("images audit of a missing image: %+v", r)
	}
}
