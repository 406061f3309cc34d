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
//
// Two rows are about one organization's member rather than another
// tenant: the key of a member demoted from admin to member acts with the
// lesser role on both APIs (authz.AuthenticateKey; REST refuses its key
// management, and the E2B API, which has no admin-only route, serves it
// as a member's), and the key of a removed member is refused (401) on
// every E2B route, as on every REST route.
func TestCrossTenantMatrixE2B(t *testing.T) {
	t.Parallel()
	for _, c := range []matrixCase{
		{name: "personal"},
		{name: "org-vs-org", aOrg: true, bOrg: true},
		{name: "member-personal-vs-org", aOrg: true, bMember: true},
		{name: "demoted-member", aOrg: true, bDemoted: true},
		{name: "removed-member", aOrg: true, bRemoved: true},
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
	var orgA api.Organization
	if c.aOrg {
		orgA = e.newOrg(e.KeyA, "a-org")
		keyA = e.orgKey(e.KeyA, orgA.ID, "").Key
		switch {
		case c.bMember:
			e.join(e.KeyA, e.KeyB, orgA.ID, "b@example.com", api.OrgRoleMember)
		case c.bDemoted, c.bRemoved:
			e.join(e.KeyA, e.KeyB, orgA.ID, "b@example.com", api.OrgRoleAdmin)
			keyB = e.orgKey(e.KeyB, orgA.ID, api.RoleAdmin).Key
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
	idB, tokB := create(keyB)
	if c.bDemoted || c.bRemoved {
		memberOfA(t, e, c, orgA.ID, keyB, idA, idB, tokB)
		return
	}
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

// memberOfA is the matrix's rows for B, an admin of A's organization
// holding an admin key of it (keyB), with which it made sandbox idB: once
// demoted to member, the key acts as a member's on both APIs; once
// removed, every E2B route refuses it, and envd the token of idB.
func memberOfA(t *testing.T, e *env, c matrixCase, orgID, keyB, idA, idB, tokB string) {
	t.Helper()
	member := "/v1/organizations/" + orgID + "/members/" + accountID(t, e, e.KeyB)
	if c.bRemoved {
		if resp, body := e.do("DELETE", member, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("remove B: %d %s", resp.StatusCode, body)
		}
		resp, body := e.do("GET", "/v1/sandboxes", keyB, nil)
		wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidAPIKey)
		e.Sidecar.Route("/", func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("a refused request reached a sidecar: %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
		})
		t.Run("control plane", func(t *testing.T) { e2bsdk.CheckKeyRefused(t, e.URL, keyB, idA) })
		t.Run("envd", func(t *testing.T) {
			e2bsdk.CheckEnvdRefuses(t, e.URL, idB, map[string]http.Header{
				"the removed member's sandbox's token": {"X-Access-Token": {tokB}},
			})
		})
		return
	}
	if resp, body := e.do("PATCH", member, e.KeyA, api.UpdateMemberRequest{Role: api.OrgRoleMember}); resp.StatusCode != http.StatusOK {
		t.Fatalf("demote B: %d %s", resp.StatusCode, body)
	}
	// REST: what a member's key may not do, B's admin key may not either.
	resp, body := e.do("POST", "/v1/api-keys", keyB, api.CreateAPIKeyRequest{Name: "x"})
	wantError(t, resp, body, http.StatusForbidden, api.CodeForbidden)
	// E2B: no route is an admin's only, so B's key keeps a member's use
	// of the organization's sandboxes, no more.
	hdr := http.Header{"X-API-Key": {keyB}}
	for _, path := range []string{"/sandboxes/" + idA, "/sandboxes/" + idB} {
		if status, body := e2bsdk.Do(t, e.URL, "GET", path, hdr, ""); status != http.StatusOK {
			t.Errorf("GET %s with the demoted member's key: %d %s", path, status, body)
		}
	}
	if status, body := e2bsdk.Do(t, e.URL, "POST", "/v2/sandboxes", hdr, `{"templateID":"base","timeout":600}`); status != http.StatusCreated {
		t.Errorf("create with the demoted member's key: %d %s", status, body)
	}
}
