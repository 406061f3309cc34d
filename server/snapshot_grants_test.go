package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestForkRestoreInheritGrants: a fork's children hold the parent's
// secret and egress grants, and a restore those of the sandbox its
// snapshot was taken of, as they were then (the lead's decision, session
// 21; state20's item 1: the child's exec with secret_env was 404
// secret_not_referenced_by_session). A secret deleted since is not
// resolvable, a snapshot recorded without grants (taken before they
// were recorded) restores with none, and another account's secret of the
// same name is never what a child resolves.
func TestForkRestoreInheritGrants(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	e, d := newSnapEnvWithStore(t, server.Config{
		Secrets: testSecrets(t, st), SecretEnv: true,
		RateLimits: server.RateLimits{Lifecycle: 1000, Snapshot: 1000},
	}, st)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"exit_code":0,"stdout":"%s","stderr":"","duration_ms":1}`, req.Env["X"])
	}
	createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "TOKEN", Value: "value-of-a", AllowedHosts: []string{"a.example.com"}})
	gone := createSecret(t, e, e.KeyA, api.CreateSecretRequest{Name: "GONE", Value: "gone-value", AllowedHosts: []string{"a.example.com"}})
	createSecret(t, e, e.KeyB, api.CreateSecretRequest{Name: "TOKEN", Value: "value-of-b", AllowedHosts: []string{"a.example.com"}})
	parent := e.create(e.KeyA, api.CreateSandboxRequest{SecretNames: []string{"TOKEN", "GONE"}, EgressHosts: []string{"api.example.com"}})

	resp, body := e.do("POST", sandboxPath(parent.ID, "/snapshots"), e.KeyA, api.CreateSnapshotRequest{})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", resp.StatusCode, body)
	}
	var sn api.Snapshot
	mustUnmarshal(t, body, &sn)
	if resp, body := e.do("DELETE", "/v1/secrets/"+gone.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete GONE: %d %s", resp.StatusCode, body)
	}

	// secretEnv runs an exec in sb with X from the secret name and
	// returns the status and what the sidecar got as X.
	secretEnv := func(sb, name string) (int, string) {
		t.Helper()
		before, _ := e.Sidecar.Requests()
		resp, _ := e.do("POST", sandboxPath(sb, "/exec"), e.KeyA, api.ExecRequest{Command: "true", SecretEnv: map[string]string{"X": name}})
		after, _ := e.Sidecar.Requests()
		if len(after) == len(before) {
			return resp.StatusCode, ""
		}
		return resp.StatusCode, after[len(after)-1].Env["X"]
	}
	check := func(what, id string) {
		t.Helper()
		if code, got := secretEnv(id, "TOKEN"); code != http.StatusOK || got != "value-of-a" {
			t.Errorf("%s: exec with TOKEN: %d, the sandbox got %q; want 200 and A's value", what, code, got)
		}
		if code, got := secretEnv(id, "GONE"); code == http.StatusOK || got != "" {
			t.Errorf("%s: exec with the deleted GONE: %d, the sandbox got %q; want a refusal", what, code, got)
		}
		grants, err := st.SandboxEgress(t.Context(), id)
		if err != nil || !slices.Equal(grants, []string{"api.example.com:443"}) {
			t.Errorf("%s: egress grants %q, %v; want the parent's", what, grants, err)
		}
		specs := d.Created()
		if i := slices.IndexFunc(specs, func(s model.Spec) bool { return s.ID == id }); i < 0 || specs[i].Egress == nil {
			t.Errorf("%s: the driver was not asked to serve its egress", what)
		}
	}

	resp, body = e.do("POST", sandboxPath(parent.ID, "/fork"), e.KeyA, map[string]any{"count": 2})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("fork: %d %s", resp.StatusCode, body)
	}
	var kids []api.Sandbox
	mustUnmarshal(t, body, &kids)
	for _, k := range kids {
		check("fork child", k.ID)
	}

	resp, body = e.do("POST", "/v1/snapshots/"+sn.ID+"/restore", e.KeyA, api.RestoreSnapshotRequest{})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("restore: %d %s", resp.StatusCode, body)
	}
	var restored api.Sandbox
	mustUnmarshal(t, body, &restored)
	check("restore", restored.ID)

	// A snapshot recorded without grants restores with none.
	old := &model.Snapshot{
		ID: model.NewID(), AccountID: e.AcctA.ID, SandboxID: parent.ID, Status: api.SnapshotCompleted, Key: "key-old",
		Driver: "fake", Size: api.SizeSmall, CreatedAt: e.clock.Now(),
	}
	if err := st.ReserveSnapshot(t.Context(), old, 0); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("POST", "/v1/snapshots/"+old.ID+"/restore", e.KeyA, api.RestoreSnapshotRequest{})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("restore of the old snapshot: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &restored)
	if code, got := secretEnv(restored.ID, "TOKEN"); code != http.StatusNotFound || got != "" {
		t.Errorf("restore of a snapshot without grants: exec with TOKEN %d, got %q; want 404", code, got)
	}
	if grants, err := st.SandboxEgress(t.Context(), restored.ID); err != nil || len(grants) != 0 {
		t.Errorf("restore of a snapshot without grants: egress %q, %v", grants, err)
	}
}
