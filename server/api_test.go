package server_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{Version: "v1.2.3"})
	for _, path := range []string{"/health", "/health/ready"} {
		resp, body := e.do("GET", path, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		var h api.Health
		mustUnmarshal(t, body, &h)
		want := map[string]string{"/health": "healthy", "/health/ready": "ready"}[path]
		if h.Status != want || h.Version != "v1.2.3" {
			t.Errorf("GET %s = %+v, want status %q version v1.2.3", path, h, want)
		}
	}
	e.Store.Close()
	resp, body := e.do("GET", "/health/ready", "", nil)
	wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeServiceUnavailable)
	if resp, _ := e.do("GET", "/health", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health with the store down = %d, want 200 (liveness does no I/O)", resp.StatusCode)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	revoked := e.addKey(e.AcctA, model.RoleAdmin)
	k, _, err := e.Store.APIKeyByHash(context.Background(), model.HashAPIKey(revoked))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.RevokeAPIKey(context.Background(), e.AcctA.ID, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header string
		status int
		code   string
	}{
		{"missing", "", 401, api.CodeUnauthorized},
		{"not bearer", "Basic dXNlcjpwYXNz", 401, api.CodeUnauthorized},
		{"bearer without key", "Bearer", 401, api.CodeUnauthorized},
		{"malformed key", "Bearer nope", 401, api.CodeInvalidAPIKey},
		{"unknown key", "Bearer " + model.NewAPIKey(), 401, api.CodeInvalidAPIKey},
		{"revoked key", "Bearer " + revoked, 401, api.CodeInvalidAPIKey},
		{"valid key", "Bearer " + e.KeyA, 200, ""},
		{"lower-case scheme", "bearer " + e.KeyA, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.header != "" {
				hdr = []string{"Authorization", tt.header}
			}
			resp, body := e.do("GET", "/v1/sandboxes", "", nil, hdr...)
			if tt.code == "" {
				if resp.StatusCode != tt.status {
					t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, body)
				}
				return
			}
			ae := wantError(t, resp, body, tt.status, tt.code)
			if ae.Hint == "" {
				t.Errorf("error has no hint: %s", body)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	tests := []struct {
		name, path, key, incoming string
		echo                      bool
	}{
		{"success, generated", "/v1/sandboxes", e.KeyA, "", false},
		{"success, echoed", "/v1/sandboxes", e.KeyA, "trace-123:abc", true},
		{"error, echoed", "/v1/sandboxes", "", "req.42", true},
		{"unknown route", "/v2/nothing", e.KeyA, "", false},
		{"unsafe incoming replaced", "/health", "", "bad id\twith tabs", false},
		{"overlong incoming replaced", "/health", "", strings.Repeat("a", 129), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.incoming != "" {
				hdr = []string{"X-Request-ID", tt.incoming}
			}
			resp, _ := e.do("GET", tt.path, tt.key, nil, hdr...)
			got := resp.Header.Get("X-Request-ID")
			if got == "" {
				t.Fatal("no X-Request-ID")
			}
			if (got == tt.incoming) != tt.echo {
				t.Errorf("X-Request-ID = %q for incoming %q; echo = %v, want %v", got, tt.incoming, got == tt.incoming, tt.echo)
			}
			if !strings.Contains(e.Logs.String(), "request_id="+got) {
				t.Errorf("no log line carries request_id=%s", got)
			}
		})
	}
}

func TestNoRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	resp, body := e.do("GET", "/v1/nope", e.KeyA, nil)
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{MaxLifetime: 1440 * time.Minute, MaxStorageGB: 20})
	tests := []struct {
		name     string
		body     any
		status   int
		code     string
		hintHas  string
		field    string
		wantNone bool
	}{
		{"unknown size", `{"size":"huge"}`, 422, api.CodeValidation, "", "size", true},
		{"lifetime over max", `{"lifetime_minutes":1441}`, 422, api.CodeValidation, "1440", "lifetime_minutes", true},
		{"negative lifetime", `{"lifetime_minutes":-5}`, 422, api.CodeValidation, "", "lifetime_minutes", true},
		{"count over max", `{"count":11}`, 422, api.CodeValidation, "", "count", true},
		{"negative count", `{"count":-1}`, 422, api.CodeValidation, "", "count", true},
		{"storage over max", `{"storage_gb":20.5}`, 429, api.CodeSandboxStorageLimitReached, "20", "requested_storage_gb", true}, // a fair-use limit, reference §3.4
		{"negative storage", `{"storage_gb":-1}`, 422, api.CodeValidation, "", "storage_gb", true},
		{"label too long", map[string]string{"label": strings.Repeat("x", 201)}, 422, api.CodeValidation, "", "label", true},
		{"image", `{"image_id":"img"}`, 422, api.CodeNotSupported, "image_id", "image_id", true},
		{"volume outside workspace", `{"volume_mounts":{"v":"/mnt/v"}}`, 422, api.CodeValidation, "/workspace", "volume_mounts", true},
		{"unknown volume", `{"volume_mounts":{"v":"/workspace/v"}}`, 404, api.CodeNotFound, "volumes ls", "", true},
		{"unknown mcp connection", `{"mcp_connection_names":["slack"]}`, 404, api.CodeMCPConnectionNotFound, "mcp-connections ls", "", true},
		{"secrets without a secrets key", `{"secret_names":["s"]}`, 503, api.CodeSecretsUnavailable, "--secrets-key-file", "", true},
		{"wrong type", `{"count":"two"}`, 422, api.CodeValidation, "", "count", true},
		{"not json", `{"size":`, 400, api.CodeBadRequest, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, tt.body)
			ae := wantError(t, resp, body, tt.status, tt.code)
			if !strings.Contains(ae.Hint, tt.hintHas) {
				t.Errorf("hint %q does not mention %q", ae.Hint, tt.hintHas)
			}
			if tt.field != "" && !strings.Contains(string(body), `"`+tt.field+`"`) {
				t.Errorf("details do not name field %q: %s", tt.field, body)
			}
		})
	}
	if n := len(e.Driver.Created()); n != 0 {
		t.Errorf("driver.Create called %d times for invalid requests, want 0", n)
	}
}

func TestSandboxLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{DefaultLifetime: 30 * time.Minute, MaxLifetime: 24 * time.Hour})
	created := e.clock.Now()

	// An empty body takes every default.
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var sb api.Sandbox
	mustUnmarshal(t, body, &sb)
	want := api.Sandbox{
		ID: sb.ID, Status: api.StatusActive, Size: api.SizeSmall, LifetimeMinutes: 30,
		CreatedAt: created, ExpiresAt: created.Add(30 * time.Minute),
	}
	if diff := cmp.Diff(want, sb); diff != "" {
		t.Errorf("created sandbox (-want +got):\n%s", diff)
	}
	if strings.Contains(string(body), e.Sidecar.Token) || strings.Contains(string(body), e.Sidecar.Listener.Addr().String()) {
		t.Errorf("API response leaks the sidecar endpoint or token: %s", body)
	}
	spec := e.Driver.Created()[0]
	if spec.ID != sb.ID || spec.Size != api.SizeSmall || spec.Lifetime != 30*time.Minute {
		t.Errorf("driver spec = %+v, want id %s size small lifetime 30m", spec, sb.ID)
	}

	custom := e.create(e.KeyA, api.CreateSandboxRequest{Label: "mine", Size: api.SizeLarge, StorageGB: 2.5, LifetimeMinutes: 90})
	if custom.Label != "mine" || custom.Size != api.SizeLarge || custom.StorageGB != 2.5 ||
		custom.LifetimeMinutes != 90 || !custom.ExpiresAt.Equal(custom.CreatedAt.Add(90*time.Minute)) {
		t.Errorf("custom sandbox = %+v", custom)
	}

	// count > 1 answers with an array.
	e.clock.Advance(time.Second)
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Count: 3})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create count=3: %d %s", resp.StatusCode, body)
	}
	var many []api.Sandbox
	mustUnmarshal(t, body, &many)
	if len(many) != 3 {
		t.Fatalf("count=3 returned %d sandboxes", len(many))
	}

	resp, body = e.do("GET", sandboxPath(sb.ID), e.KeyA, nil)
	var got api.Sandbox
	mustUnmarshal(t, body, &got)
	if resp.StatusCode != 200 || got.ID != sb.ID {
		t.Errorf("get: %d %s", resp.StatusCode, body)
	}

	// Delete, then it is destroyed and a second delete is 404.
	e.clock.Advance(time.Minute)
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if !contains(e.Driver.Deleted(), sb.ID) {
		t.Errorf("driver.Delete not called for %s", sb.ID)
	}
	_, body = e.do("GET", sandboxPath(sb.ID), e.KeyA, nil)
	mustUnmarshal(t, body, &got)
	if got.Status != api.StatusDestroyed || got.DestroyReason != model.ReasonDeleted ||
		got.DestroyedAt == nil || !got.DestroyedAt.Equal(created.Add(time.Second+time.Minute)) {
		t.Errorf("after delete: %+v", got)
	}
	resp, body = e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)

	// Lists are newest first; active_only drops the destroyed one.
	listIDs := func(query string) []string {
		t.Helper()
		resp, body := e.do("GET", "/v1/sandboxes"+query, e.KeyA, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("list%s: %d %s", query, resp.StatusCode, body)
		}
		var list []api.Sandbox
		mustUnmarshal(t, body, &list)
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		return ids
	}
	all, active := listIDs(""), listIDs("?active_only=true")
	var manyIDs []string
	for _, m := range many {
		manyIDs = append(manyIDs, m.ID)
	}
	if len(all) != 5 || !sameSet(all[:3], manyIDs) || !sameSet(all[3:], []string{sb.ID, custom.ID}) {
		t.Errorf("list = %v, want newest first: %v then %v", all, manyIDs, []string{sb.ID, custom.ID})
	}
	if len(active) != 4 || contains(active, sb.ID) {
		t.Errorf("active list = %v, want the 4 not deleted", active)
	}
	if got := listIDs("?active_only=false"); len(got) != 5 {
		t.Errorf("active_only=false listed %d, want 5", len(got))
	}
	resp, body = e.do("GET", "/v1/sandboxes?active_only=maybe", e.KeyA, nil)
	wantError(t, resp, body, 422, api.CodeValidation)

	// Extend moves expires_at to now + lifetime.
	e.clock.Advance(10 * time.Minute)
	resp, body = e.do("POST", sandboxPath(custom.ID, "/extend"), e.KeyA, api.ExtendSandboxRequest{LifetimeMinutes: 120})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("extend: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &got)
	if wantExp := e.clock.Now().Add(120 * time.Minute); !got.ExpiresAt.Equal(wantExp) {
		t.Errorf("expires_at after extend = %v, want %v", got.ExpiresAt, wantExp)
	}
	if got.LifetimeMinutes != int(math.Ceil(got.ExpiresAt.Sub(got.CreatedAt).Minutes())) {
		t.Errorf("lifetime_minutes after extend = %d, want expires_at - created_at rounded up", got.LifetimeMinutes)
	}
	for _, tt := range []struct {
		name   string
		id     string
		body   any
		status int
		code   string
	}{
		{"zero", custom.ID, `{"lifetime_minutes":0}`, 422, api.CodeValidation},
		{"missing", custom.ID, `{}`, 422, api.CodeValidation},
		{"over max", custom.ID, `{"lifetime_minutes":1441}`, 422, api.CodeValidation},
		{"destroyed", sb.ID, `{"lifetime_minutes":10}`, 409, api.CodeConflict},
		{"unknown", model.NewID(), `{"lifetime_minutes":10}`, 404, api.CodeNotFound},
	} {
		resp, body := e.do("POST", sandboxPath(tt.id, "/extend"), e.KeyA, tt.body)
		t.Run("extend "+tt.name, func(t *testing.T) { wantError(t, resp, body, tt.status, tt.code) })
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCrossAccount: every sandbox route answers 404 for another account's
// sandbox, exactly as for one that does not exist, and changes nothing.
func TestCrossAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", sandboxPath(sb.ID), nil},
		{"DELETE", sandboxPath(sb.ID), nil},
		{"POST", sandboxPath(sb.ID, "/extend"), api.ExtendSandboxRequest{LifetimeMinutes: 5}},
		{"POST", sandboxPath(sb.ID, "/exec"), api.ExecRequest{Command: "id"}},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+strings.TrimPrefix(rt.path, sandboxPath(sb.ID)), func(t *testing.T) {
			resp, body := e.do(rt.method, rt.path, e.KeyB, rt.body)
			wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
		})
	}
	resp, body := e.do("GET", "/v1/sandboxes", e.KeyB, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("B's list = %d %s, want []", resp.StatusCode, body)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 0 {
		t.Errorf("B's exec reached A's sidecar: %+v", reqs)
	}
	_, body = e.do("GET", sandboxPath(sb.ID), e.KeyA, nil)
	var got api.Sandbox
	mustUnmarshal(t, body, &got)
	if got.Status != api.StatusActive || !got.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Errorf("A's sandbox changed by B's requests: %+v", got)
	}
}

func TestCreateDriverFailure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		count  int
		failOn int // the n-th Create (1-based) fails
	}{
		{"single", 1, 1},
		{"one of a batch", 3, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, server.Config{})
			var mu sync.Mutex
			calls := 0
			e.Driver.CreateFunc = func(context.Context, model.Spec) (model.Endpoint, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n == tt.failOn {
					return model.Endpoint{}, errors.New("jail: secret internal detail /var/lib/x")
				}
				return e.Sidecar.Endpoint(), nil
			}
			resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Count: tt.count})
			wantError(t, resp, body, http.StatusBadGateway, api.CodeSandboxFailed)
			if strings.Contains(string(body), "secret internal detail") {
				t.Errorf("the driver's error leaked to the client: %s", body)
			}
			if !strings.Contains(e.Logs.String(), "secret internal detail") {
				t.Errorf("the driver's error was not logged")
			}
			ctx := context.Background()
			for _, status := range []string{model.StatusCreating, api.StatusActive} {
				if rows, err := e.Store.SandboxesWithStatus(ctx, status); err != nil || len(rows) != 0 {
					t.Errorf("rows with status %s after a failed create: %d (%v)", status, len(rows), err)
				}
			}
			if rows, _ := e.Store.ListSandboxes(ctx, e.AcctA.ID, false); len(rows) != 0 {
				t.Errorf("a failed create left %d rows", len(rows))
			}
			if got := len(e.Driver.Deleted()); got != tt.count {
				t.Errorf("driver.Delete called %d times, want %d (every sandbox of the batch torn down)", got, tt.count)
			}
		})
	}
}
