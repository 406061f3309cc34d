package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

func TestWriteSandboxTable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	destroyed := now.Add(-time.Minute)
	sbs := []api.Sandbox{
		{ID: "3f2a9c01", Status: api.StatusActive, Label: "build", Size: "small", CreatedAt: now.Add(-90 * time.Second), ExpiresAt: now.Add(119 * time.Minute)},
		{ID: "77aa", Status: api.StatusDestroyed, Size: "medium", CreatedAt: now.Add(-50 * time.Hour), ExpiresAt: now.Add(-time.Hour), DestroyedAt: &destroyed},
	}
	var b strings.Builder
	if err := writeSandboxTable(&b, sbs, now, false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID        STATUS     LABEL  SIZE    AGE   EXPIRES\n" +
		"3f2a9c01  active     build  small   1m    in 1h59m\n" +
		"77aa      destroyed  -      medium  2d2h  -\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestSessionCommands drives create, ls, get, extend and rm against a fake API.
func TestSessionCommands(t *testing.T) {
	home := isolate(t)
	var (
		mu      sync.Mutex
		created []api.CreateSandboxRequest
		deleted []string
		extend  []api.ExtendSandboxRequest
	)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	list := []api.Sandbox{
		{ID: "aaa111", Status: api.StatusActive, Label: "one", Size: "small", ExpiresAt: expires},
		{ID: "bbb222", Status: api.StatusActive, Size: "medium", ExpiresAt: expires},
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			var req api.CreateSandboxRequest
			json.NewDecoder(r.Body).Decode(&req)
			mu.Lock()
			created = append(created, req)
			mu.Unlock()
			if req.Count > 1 {
				replyJSON(201, []api.Sandbox{{ID: "n1"}, {ID: "n2"}})(w, r)
				return
			}
			replyJSON(201, api.Sandbox{ID: "n1", Status: api.StatusActive})(w, r)
		},
		"GET /v1/sandboxes": func(w http.ResponseWriter, r *http.Request) {
			replyJSON(200, list)(w, r)
		},
		// --volume takes a label or an id prefix too.
		"GET /v1/volumes": replyJSON(200, []api.Volume{{ID: "f00d0000-0000-4000-8000-000000000001", Label: "data"}}),
		"DELETE /v1/sandboxes/{id}": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deleted = append(deleted, r.PathValue("id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
		"POST /v1/sandboxes/{id}/extend": func(w http.ResponseWriter, r *http.Request) {
			var req api.ExtendSandboxRequest
			json.NewDecoder(r.Body).Decode(&req)
			extend = append(extend, req)
			replyJSON(200, api.Sandbox{ID: r.PathValue("id"), ExpiresAt: expires})(w, r)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	if r := runCLI(t, "", "session", "create", "--label", "x", "--size", "medium", "--lifetime", "90s", "--volume", "data=/data", "--volume", "v1=/v1", "--secret", "s1"); r.stdout != "n1\n" || r.code != 0 {
		t.Errorf("session create: %+v, want the id on stdout", r)
	}
	if r := runCLI(t, "", "sbx", "cr", "--count", "2"); r.stdout != "n1\nn2\n" || r.code != 0 {
		t.Errorf("sbx cr --count 2: %+v, want both ids", r)
	}
	wantCreated := []api.CreateSandboxRequest{
		{Label: "x", Size: "medium", LifetimeMinutes: 2, Count: 1, VolumeMounts: map[string]string{"f00d0000-0000-4000-8000-000000000001": "/data", "v1": "/v1"}, SecretNames: []string{"s1"}},
		{Size: "small", Count: 2},
	}
	if diff := cmp.Diff(wantCreated, created); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
	// One volume named twice, by the same reference or by its label and
	// an id prefix, is refused: the second used to replace the first.
	for _, second := range []string{"data=/workspace/b", "f00d=/workspace/b"} {
		r := runCLI(t, "", "session", "create", "--volume", "data=/workspace/a", "--volume", second)
		if r.code != exitUsage || !strings.Contains(r.stderr, "given twice") || !strings.Contains(r.stderr, "hint: ") {
			t.Errorf("create --volume data=… --volume %s: %+v, want exit %d saying it is given twice", second, r, exitUsage)
		}
	}
	if len(created) != len(wantCreated) {
		t.Errorf("a create naming a volume twice reached the server: %+v", created[len(wantCreated):])
	}

	r := runCLI(t, "", "session", "ls")
	if got := fields(r.stdout); len(got) != 3 || got[0][0] != "ID" || got[1][0] != "aaa111" || got[2][2] != "-" {
		t.Errorf("session ls:\n%s", r.stdout)
	}
	r = runCLI(t, "", "session", "ls", "-o", "json")
	var sbs []api.Sandbox
	if err := json.Unmarshal([]byte(r.stdout), &sbs); err != nil || len(sbs) != 2 {
		t.Errorf("session ls -o json = %q (%v), want the API's array", r.stdout, err)
	}
	if r := runCLI(t, "", "session", "get", "one", "--json"); !strings.Contains(r.stdout, `"id": "aaa111"`) {
		t.Errorf("session get one --json: %+v", r)
	}
	if r := runCLI(t, "", "session", "get", "zzz"); r.code != exitNotFound {
		t.Errorf("session get zzz: code %d, want %d", r.code, exitNotFound)
	}
	if r := runCLI(t, "", "session", "extend", "bbb", "--lifetime", "2h"); r.stdout != expires.Format(time.RFC3339)+"\n" || r.code != 0 {
		t.Errorf("session extend: %+v, want the new expiry", r)
	}
	if diff := cmp.Diff([]api.ExtendSandboxRequest{{LifetimeMinutes: 120}}, extend); diff != "" {
		t.Errorf("extend requests (-want +got):\n%s", diff)
	}
	if r := runCLI(t, "", "session", "rm", "aaa", "nope", "--yes"); r.code != exitNotFound || !strings.Contains(r.stderr, "removed sandbox aaa111") {
		t.Errorf("session rm aaa nope: %+v, want aaa111 removed and exit %d for nope", r, exitNotFound)
	}
	if r := runCLI(t, "", "session", "rm", "--all", "--yes"); r.code != 0 {
		t.Errorf("session rm --all: %+v", r)
	}
	if diff := cmp.Diff([]string{"aaa111", "aaa111", "bbb222"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

// TestSessionRmPaused: 'session rm' removes a paused sandbox, as the API
// does (docs/snapshots.md: "Delete works"), rather than telling the user
// to resume it first; a destroyed one is still refused before any
// request (session 20, state20).
func TestSessionRmPaused(t *testing.T) {
	home := isolate(t)
	var (
		mu      sync.Mutex
		deleted []string
	)
	list := []api.Sandbox{
		{ID: "ppp111", Status: api.StatusPaused, PausedWith: api.PauseFilesystem, Label: "held"},
		{ID: "ddd222", Status: api.StatusDestroyed},
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, list),
		"DELETE /v1/sandboxes/{id}": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deleted = append(deleted, r.PathValue("id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		},
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	if r := runCLI(t, "", "session", "rm", "held", "--yes"); r.code != 0 || r.stderr != "removed sandbox ppp111\n" {
		t.Errorf("session rm of a paused sandbox: %+v, want it removed", r)
	}
	if r := runCLI(t, "", "session", "rm", "ddd", "--yes"); r.code != exitError || !strings.Contains(r.stderr, "sandbox ddd222 is destroyed") {
		t.Errorf("session rm of a destroyed sandbox: %+v, want it refused", r)
	}
	if diff := cmp.Diff([]string{"ppp111"}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

// TestSandboxDetailSidecarProtocol: `session get` shows the protocol the
// sandbox's sidecar stated, and says when it is older than this build's
// (a sandbox started before an upgrade) and what to do; nothing when the
// server did not say.
func TestSandboxDetailSidecarProtocol(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, current := api.SidecarProtocol-1, api.SidecarProtocol
	for _, tt := range []struct {
		name     string
		protocol *int
		want     string // the row, "" for none
	}{
		{"unknown", nil, ""},
		{"current", &current, fmt.Sprintf("sidecar protocol:  %d\n", current)},
		{"older", &older, fmt.Sprintf("sidecar protocol:  %d (older than this boxkite's %d: the sandbox started before an upgrade; `boxkite session fork sb1` gives one with the current sidecar)\n", older, current)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			sb := api.Sandbox{ID: "sb1", Status: api.StatusActive, CreatedAt: now, ExpiresAt: now.Add(time.Hour), SidecarProtocol: tt.protocol}
			if err := writeSandboxDetail(&b, sb, now); err != nil {
				t.Fatal(err)
			}
			_, row, found := strings.Cut(b.String(), "sidecar protocol:")
			if got := "sidecar protocol:" + row; !found && tt.want != "" || found && got != tt.want {
				t.Errorf("session get:\n%s\nwant the row %q", b.String(), tt.want)
			}
		})
	}
}

// TestSandboxDetailFrozen: session get says why a sandbox is frozen, from
// its frozen_reason: the clone pool or the host's disk.
func TestSandboxDetailFrozen(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		reason string
		want   string // the row, "" for none
	}{
		{"", ""},
		{api.FrozenHostDisk, "the host ran out of disk space; it resumes once space is freed\n"},
		{api.FrozenClonePool, "the clone pool that holds the sandboxes' disks ran out of space; it resumes once space is freed in it\n"},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			var b strings.Builder
			sb := api.Sandbox{ID: "sb1", Status: api.StatusActive, CreatedAt: now, ExpiresAt: now.Add(time.Hour), FrozenReason: tt.reason}
			if err := writeSandboxDetail(&b, sb, now); err != nil {
				t.Fatal(err)
			}
			_, row, found := strings.Cut(b.String(), "frozen:")
			if got := strings.TrimLeft(row, " "); !found && tt.want != "" || found && got != tt.want {
				t.Errorf("session get:\n%s\nwant the row %q", b.String(), tt.want)
			}
		})
	}
}
