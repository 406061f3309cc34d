package cli

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// TestVolumeAndMCPCommands drives volumes and mcp-connections against a fake API.
func TestVolumeAndMCPCommands(t *testing.T) {
	home := isolate(t)
	var (
		mu       sync.Mutex
		vols     []api.CreateVolumeRequest
		conns    []api.CreateMCPConnectionRequest
		deleted  []string
		created  = time.Now().Add(-time.Hour)
		volume   = api.Volume{ID: "v1", Label: "data", SizeGB: 2, Status: api.VolumeReady, CreatedAt: created}
		conn     = api.MCPConnection{ID: "m1", Label: "gh", CatalogID: "github", Host: "api.githubcopilot.com"}
		inUseErr = api.ErrorEnvelope{Error: &api.Error{Code: api.CodeVolumeInUse, Message: "volume v2 is mounted by an active sandbox"}}
	)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/volumes": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateVolumeRequest
			json.NewDecoder(r.Body).Decode(&req)
			mu.Lock()
			vols = append(vols, req)
			mu.Unlock()
			replyJSON(201, volume)(w, r)
		},
		"GET /v1/volumes":      replyJSON(200, []api.Volume{volume}),
		"GET /v1/volumes/{id}": replyJSON(200, volume),
		"DELETE /v1/volumes/{id}": func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("id") == "v2" {
				replyJSON(409, inUseErr)(w, r)
				return
			}
			mu.Lock()
			deleted = append(deleted, r.PathValue("id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
		"POST /v1/mcp-connections": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateMCPConnectionRequest
			json.NewDecoder(r.Body).Decode(&req)
			mu.Lock()
			conns = append(conns, req)
			mu.Unlock()
			replyJSON(201, conn)(w, r)
		},
		"GET /v1/mcp-connections": replyJSON(200, []api.MCPConnection{conn}),
		"DELETE /v1/mcp-connections/{id}": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deleted = append(deleted, r.PathValue("id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	if r := runCLI(t, "", "volumes", "create", "--size-gb", "2", "--label", "data"); r.stdout != "v1\n" || r.code != 0 {
		t.Errorf("volumes create: %+v", r)
	}
	if r := runCLI(t, "", "volumes", "create"); r.code != 0 {
		t.Errorf("volumes create (defaults): %+v", r)
	}
	// --size-gb 0 used to reach the server as no size and make 1 GiB.
	for _, size := range []string{"0", "-1"} {
		if r := runCLI(t, "", "volumes", "create", "--size-gb", size); r.code != exitUsage || !strings.Contains(r.stderr, "hint: ") {
			t.Errorf("volumes create --size-gb %s: %+v, want exit %d with a hint", size, r, exitUsage)
		}
	}
	if diff := cmp.Diff([]api.CreateVolumeRequest{{Label: "data", SizeGB: 2}, {SizeGB: 1}}, vols); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
	r := runCLI(t, "", "volumes", "ls")
	if got := fields(r.stdout); len(got) != 2 || got[0][0] != "ID" || got[1][0] != "v1" || got[1][2] != "2" {
		t.Errorf("volumes ls:\n%s", r.stdout)
	}
	if r := runCLI(t, "", "volumes", "get", "v1", "--json"); !strings.Contains(r.stdout, `"status": "ready"`) {
		t.Errorf("volumes get --json: %+v", r)
	}
	// By label, as volumes ls shows it.
	if r := runCLI(t, "", "volumes", "get", "data"); !strings.Contains(r.stdout, "\nlabel:    data\n") || !strings.HasPrefix(r.stdout, "id:       v1\n") {
		t.Errorf("volumes get data: %+v", r)
	}
	if r := runCLI(t, "", "volumes", "rm", "v2", "-y"); r.code == 0 || !strings.Contains(r.stderr, "mounted by an active sandbox") {
		t.Errorf("volumes rm of a mounted volume: %+v", r)
	}
	if r := runCLI(t, "", "mcp-connections", "create", "gh", "github"); r.stdout != "m1\n" || r.code != 0 {
		t.Errorf("mcp-connections create: %+v", r)
	}
	if diff := cmp.Diff([]api.CreateMCPConnectionRequest{{Label: "gh", CatalogID: "github"}}, conns); diff != "" {
		t.Errorf("mcp requests (-want +got):\n%s", diff)
	}
	r = runCLI(t, "", "mcp-connections", "ls")
	if got := fields(r.stdout); len(got) != 2 || got[1][3] != "api.githubcopilot.com" {
		t.Errorf("mcp-connections ls:\n%s", r.stdout)
	}
	runCLI(t, "", "volumes", "rm", "v1", "-y")
	runCLI(t, "", "mcp-connections", "rm", "m1", "--yes")
	if diff := cmp.Diff([]string{"v1", "m1"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}
