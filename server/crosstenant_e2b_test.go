package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b"
)

// TestCrossTenantMatrixE2B is the cross-tenant matrix's rows for the E2B
// API on the same listener (issue 21, acceptance 2): every E2B
// control-plane route (e2b.Routes), called with account B's key about
// account A's sandbox, answers E2B's 404 exactly as for no sandbox; every
// envd route (envd.Routes, each RPC included) refuses a call for A's
// sandbox with no token, with the token of B's sandbox or of another of
// A's; and none of it reaches A's sidecar. A route without a row fails.
// (cmd/boxkite-server's TestE2BIsolation runs the same rows against real
// sandboxes.) The tenants are personal accounts, two organizations (keys
// of each), and a member of A's organization using their personal key.
func TestCrossTenantMatrixE2B(t *testing.T) {
	t.Parallel()
	for _, c := range []matrixCase{
		{name: "personal"},
		{name: "org-vs-org", aOrg: true, bOrg: true},
		{name: "member-personal-vs-org", aOrg: true, bMember: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			crossTenantMatrixE2B(t, c)
		})
	}
}

func crossTenantMatrixE2B(t *testing.T, c matrixCase) {
	e := newEnv(t, server.Config{})
	e.Server.MountE2B(e2b.New(e.Server.E2B(), e.Store.(e2b.Store), nil), e2b.Matches)
	keyA, keyB := e.KeyA, e.KeyB
	if c.aOrg {
		orgA := e.newOrg(e.KeyA, "a-org")
		keyA = e.orgKey(e.KeyA, orgA.ID, "").Key
		if c.bMember {
			e.join(e.KeyA, e.KeyB, orgA.ID, "b@example.com", api.OrgRoleMember)
		}
	}
	if c.bOrg {
		keyB = e.orgKey(e.KeyB, e.newOrg(e.KeyB, "b-org").ID, "").Key
	}
	create := func(key string) (id, token string) {
		status, body := e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", http.Header{"X-API-Key": {key}}, `{"templateID":"base","timeout":600}`)
		var sb struct{ SandboxID, EnvdAccessToken string }
		if status != http.StatusCreated || json.Unmarshal(body, &sb) != nil || sb.EnvdAccessToken == "" {
			t.Fatalf("create: %d %s", status, body)
		}
		return sb.SandboxID, sb.EnvdAccessToken
	}
	idA, _ := create(keyA)
	_, tokA2 := create(keyA)
	_, tokB := create(keyB)
	e.Sidecar.Route("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused request reached a sidecar: %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})

	t.Run("control plane", func(t *testing.T) { e2bsdk.CheckOtherTenant(t, e.URL, keyA, keyB, idA) })
	t.Run("envd", func(t *testing.T) {
		e2bsdk.CheckEnvdRefuses(t, e.URL, idA, map[string]http.Header{
			"account B's sandbox's token":         {"X-Access-Token": {tokB}},
			"account B's sandbox's traffic token": {"E2b-Traffic-Access-Token": {tokB}},
			"another sandbox of A's token":        {"X-Access-Token": {tokA2}},
		})
	})
}
