package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
	"github.com/boxkite/boxkite/server/model"
)

// TestSnapshotLabelRefused: a snapshot's label, a restore's (the new
// sandbox's) and an E2B snapshot's name with a NUL character were stored
// on SQLite and a 500 on PostgreSQL, whose text cannot hold one (after
// the snapshot's copy was made); a restore's label had no bound. Each is
// refused now, 422 (400 on the E2B API), on both stores.
func TestSnapshotLabelRefused(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, _ := newSnapEnvWithStore(t, server.Config{RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000}}, open(t))
			e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			resp, body := e.do("POST", "/v1/sandboxes/"+sb.ID+"/snapshots", e.KeyA, `{"label":"ok"}`)
			var sn api.Snapshot
			if err := json.Unmarshal(body, &sn); resp.StatusCode != http.StatusCreated || err != nil {
				t.Fatalf("snapshot = %d %s", resp.StatusCode, body)
			}
			for _, tt := range []struct{ what, path, body string }{
				{"snapshot label with NUL", "/v1/sandboxes/" + sb.ID + "/snapshots", `{"label":"a\u0000b"}`},
				{"restore label with NUL", "/v1/snapshots/" + sn.ID + "/restore", `{"label":"a\u0000b"}`},
				{"restore label too long", "/v1/snapshots/" + sn.ID + "/restore", `{"label":"` + strings.Repeat("x", model.MaxLabelLen+1) + `"}`},
			} {
				resp, body := e.do("POST", tt.path, e.KeyA, tt.body)
				var env struct{ Error api.Error }
				if err := json.Unmarshal(body, &env); resp.StatusCode != http.StatusUnprocessableEntity || err != nil || env.Error.Code != api.CodeValidation {
					t.Errorf("%s: %d %s, want 422 %s", tt.what, resp.StatusCode, body, api.CodeValidation)
				}
			}
			hdr := http.Header{"X-API-Key": {e.KeyA}}
			status, body := e2bsdk.Do(t, e.URL, "POST", "/sandboxes/"+sb.ID+"/snapshots", hdr, `{"name":"a\u0000b"}`)
			if status != http.StatusBadRequest || !strings.Contains(string(body), "NUL character") {
				t.Errorf("E2B snapshot name with NUL: %d %s, want 400 naming the NUL", status, body)
			}
			resp, body = e.do("GET", "/v1/snapshots", e.KeyA, nil)
			var sns []api.Snapshot
			if err := json.Unmarshal(body, &sns); resp.StatusCode != http.StatusOK || err != nil || len(sns) != 1 {
				t.Errorf("snapshots after the refusals: %d %s, want the one", resp.StatusCode, body)
			}
		})
	}
}
