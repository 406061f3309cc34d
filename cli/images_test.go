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

// TestImagesBuild: images build sends the packages as given and, with
// --wait, follows the build to its end: the id on success; on a refusal,
// the image's code and hint (exit 1).
func TestImagesBuild(t *testing.T) {
	home := isolate(t)
	var got []api.CreateImageRequest
	polls := 0
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/images": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateImageRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			got = append(got, req)
			id := "img_ok"
			if len(req.NPMPackages) > 0 && req.NPMPackages[0] == "phones-home==1.0.0" {
				id = "img_bad"
			}
			replyJSON(202, api.Image{ID: id, Status: api.ImageQueued, Source: api.ImageSourceBuild})(w, r)
		},
		"GET /v1/images/{id}": func(w http.ResponseWriter, r *http.Request) {
			polls++
			img := api.Image{ID: r.PathValue("id"), Status: api.ImageCompleted, Source: api.ImageSourceBuild}
			if img.ID == "img_bad" {
				img.Status, img.FailureCode, img.FailureReason = api.ImageFailed, api.CodeImageBuildEgressRefused, "the build tried to reach evil.test:443"
				img.FailureHint = "every connection it tried is in `boxkite images audit img_bad`"
			}
			replyJSON(200, img)(w, r)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	r := runCLI(t, "", "images", "build", "--npm-package", "cowsay==1.6.0", "--npm-package", "@google/gemini-cli==0.61.0", "--label", "cows", "--wait")
	if r.code != 0 || r.stdout != "img_ok\n" || !strings.Contains(r.stderr, "image img_ok: completed") {
		t.Errorf("images build --wait: %+v", r)
	}
	if len(got) != 1 || got[0].Label != "cows" || strings.Join(got[0].NPMPackages, " ") != "cowsay==1.6.0 @google/gemini-cli==0.61.0" {
		t.Errorf("build request: %+v", got)
	}
	r = runCLI(t, "", "images", "build", "--npm-package", "phones-home==1.0.0", "--wait")
	if r.code != exitError || !strings.Contains(r.stderr, "error: image img_bad failed (image_build_egress_refused): the build tried to reach evil.test:443") ||
		!strings.Contains(r.stderr, "hint: every connection it tried is in `boxkite images audit img_bad`") {
		t.Errorf("a refused build: %+v", r)
	}
	// The same with --json: the image on stdout, and still exit 1 (it was 0).
	r = runCLI(t, "", "images", "build", "--npm-package", "phones-home==1.0.0", "--wait", "--json")
	var img api.Image
	if err := json.Unmarshal([]byte(r.stdout), &img); err != nil || img.Status != api.ImageFailed || r.code != exitError ||
		!strings.Contains(r.stderr, "error: image img_bad failed (image_build_egress_refused)") {
		t.Errorf("a refused build with --json: %+v (%v)", r, err)
	}
}
