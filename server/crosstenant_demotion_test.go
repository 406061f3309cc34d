package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestCrossTenantDemotionEndsAdminHold: B, an admin of A's organization,
// holds a terminal on one of the organization's sandboxes, opened with
// B's admin key, and an unspent takeover token that key minted. Demoting
// B to member ends both, as removing B does: the terminal closes 1008
// saying so, and the token opens nothing. The key stays valid, as a
// member's: it still lists the sandboxes, and may not mint a token.
func TestCrossTenantDemotionEndsAdminHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	orgA := e.newOrg(e.KeyA, "a-org")
	e.join(e.KeyA, e.KeyB, orgA.ID, "b@example.com", api.OrgRoleAdmin)
	keyB := e.orgKey(e.KeyB, orgA.ID, api.RoleAdmin).Key
	sb := e.create(e.orgKey(e.KeyA, orgA.ID, "").Key, api.CreateSandboxRequest{})

	term, _, err := dialTakeover(t, e, sb.ID, keyB, "")
	if err != nil {
		t.Fatalf("B's admin key opens the terminal: %v", err)
	}
	defer term.CloseNow()
	resp, body := e.do("POST", sandboxPath(sb.ID, "/takeover-token"), keyB, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("B's admin key mints a token: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)

	member := "/v1/organizations/" + orgA.ID + "/members/" + accountID(t, e, e.KeyB)
	if resp, body := e.do("PATCH", member, e.KeyA, api.UpdateMemberRequest{Role: api.OrgRoleMember}); resp.StatusCode != http.StatusOK {
		t.Fatalf("demote B: %d %s", resp.StatusCode, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	for {
		if _, _, err = term.Read(ctx); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "demoted") {
		t.Errorf("B's terminal after the demotion: %v; want a policy-violation close saying the key's holder was demoted", err)
	}
	if conn, resp, err := dialTakeover(t, e, sb.ID, "", "?token="+tok.Token); err == nil {
		conn.CloseNow()
		t.Error("a takeover token B's admin key minted before the demotion still opened the terminal")
	} else if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token after the demotion: %v, want 401", err)
	}

	// The key acts as a member's: it reads, but neither mints nor takes over.
	if resp, body := e.do("GET", "/v1/sandboxes", keyB, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("list with the demoted key: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", sandboxPath(sb.ID, "/takeover-token"), keyB, nil)
	wantError(t, resp, body, http.StatusForbidden, api.CodeTakeoverNotPermitted)
}
