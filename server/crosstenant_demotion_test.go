package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/orgs"
)

// adminHold is what B, an admin of A's organization, holds with B's admin
// key of it on one of the organization's sandboxes: an open terminal, a
// watch stream and an unspent takeover token the key minted.
type adminHold struct {
	sb      api.Sandbox
	key     string // B's admin key of the organization
	member  string // B's account id
	orgID   string
	term    *websocket.Conn
	watch   *watchStream
	token   string
	minting *env // the server the token was minted on
}

// holdAsAdmin makes A's organization with B in it as role, and B's hold on
// server at (the organization is made through e).
func holdAsAdmin(t *testing.T, e, at *env, role string) adminHold {
	t.Helper()
	org := e.newOrg(e.KeyA, "a-org")
	e.join(e.KeyA, e.KeyB, org.ID, "b@example.com", role)
	h := adminHold{
		sb:     e.create(e.orgKey(e.KeyA, org.ID, "").Key, api.CreateSandboxRequest{}),
		key:    e.orgKey(e.KeyB, org.ID, api.RoleAdmin).Key,
		member: accountID(t, e, e.KeyB), orgID: org.ID, minting: at,
	}
	term, _, err := dialTakeover(t, at, h.sb.ID, h.key, "")
	if err != nil {
		t.Fatalf("B's admin key opens the terminal: %v", err)
	}
	t.Cleanup(func() { term.CloseNow() })
	h.term = term
	h.watch = openWatch(t, at.URL, h.sb.ID, h.key, "")
	resp, body := at.do("POST", sandboxPath(h.sb.ID, "/takeover-token"), h.key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("B's admin key mints a token: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)
	h.token = tok.Token
	// The watch is open once the mint's entry came through it (the
	// terminal's start may come first).
	for {
		ev, _ := h.watch.next(t, streamEnd)
		if ev.Operation == "takeover_token_mint" {
			break
		}
		if ev.Operation != "takeover_start" {
			t.Fatalf("watch event %s, want the terminal's start and the token's mint", ev.Operation)
		}
	}
	return h
}

// setRole makes B role in the organization, through server e.
func (h adminHold) setRole(t *testing.T, e *env, role string) {
	t.Helper()
	path := "/v1/organizations/" + h.orgID + "/members/" + h.member
	if resp, body := e.do("PATCH", path, e.KeyA, api.UpdateMemberRequest{Role: role}); resp.StatusCode != http.StatusOK {
		t.Fatalf("make B %s: %d %s", role, resp.StatusCode, body)
	}
}

// wantEnded fails unless the terminal closes with a policy violation that
// says its key's holder was demoted, and the watch stream ends.
func (h adminHold) wantEnded(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	var err error
	for err == nil {
		_, _, err = h.term.Read(ctx)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "demoted") {
		t.Errorf("B's terminal after the demotion: %v; want a policy-violation close saying the key's holder was demoted", err)
	}
	waitEnded(t, h.watch.events)
}

// wantOpen fails unless the terminal still relays.
func (h adminHold) wantOpen(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	if err := h.term.Write(ctx, websocket.MessageBinary, []byte("ping")); err != nil {
		t.Fatalf("write to B's terminal: %v", err)
	}
	if _, data, err := h.term.Read(ctx); err != nil || string(data) != "out:ping" {
		t.Errorf("B's terminal answered %q, %v; want it open", data, err)
	}
}

// wantTokenRefused fails unless the token opens no terminal, with the 401
// a revoked key's token gets.
func (h adminHold) wantTokenRefused(t *testing.T, at *env) {
	t.Helper()
	conn, resp, err := dialTakeover(t, at, h.sb.ID, "", "?token="+h.token)
	if err == nil {
		conn.CloseNow()
		t.Fatal("a takeover token B's admin key minted before the demotion still opened the terminal")
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token after the demotion: %v, want 401", err)
	}
	resp, body := at.do("POST", sandboxPath(h.sb.ID, "/exec"), h.token, api.ExecRequest{Command: "id"})
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidToken)
}

// TestCrossTenantDemotionEndsAdminHold: B, an admin (or owner) of A's
// organization, holds a terminal on one of its sandboxes opened with B's
// admin key, a watch stream, and an unspent takeover token that key
// minted. Demoting B to member ends all three, as removing B does: the
// terminal closes 1008 saying so, the stream ends, and the token is
// refused as a revoked key's (401 invalid_token). The key stays valid, as
// a member's: it still lists the sandboxes, and may not mint a token.
// Promoting B back revives nothing: the old token stays refused, while a
// new one works, and what B opens then is not ended by the demotion
// before.
func TestCrossTenantDemotionEndsAdminHold(t *testing.T) {
	t.Parallel()
	for _, from := range []string{api.OrgRoleAdmin, api.OrgRoleOwner} {
		t.Run(from+"-to-member", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, server.Config{})
			fakePTY(t, e)
			h := holdAsAdmin(t, e, e, from)

			h.setRole(t, e, api.OrgRoleMember)
			h.wantEnded(t)
			h.wantTokenRefused(t, e)
			if resp, body := e.do("GET", "/v1/sandboxes", h.key, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("list with the demoted key: %d %s", resp.StatusCode, body)
			}
			resp, body := e.do("POST", sandboxPath(h.sb.ID, "/takeover-token"), h.key, nil)
			wantError(t, resp, body, http.StatusForbidden, api.CodeTakeoverNotPermitted)

			h.setRole(t, e, api.OrgRoleAdmin)
			h.wantTokenRefused(t, e)
			again := holdAgain(t, e, h)
			again.wantOpen(t)
			conn, _, err := dialTakeover(t, e, h.sb.ID, "", "?token="+again.token)
			if err != nil {
				t.Fatalf("a token minted after the promotion back: %v", err)
			}
			conn.CloseNow()
		})
	}
}

// holdAgain opens a new terminal and mints a new token with h's key on e.
func holdAgain(t *testing.T, e *env, h adminHold) adminHold {
	t.Helper()
	term, _, err := dialTakeover(t, e, h.sb.ID, h.key, "")
	if err != nil {
		t.Fatalf("B's key opens the terminal again: %v", err)
	}
	t.Cleanup(func() { term.CloseNow() })
	resp, body := e.do("POST", sandboxPath(h.sb.ID, "/takeover-token"), h.key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("B's key mints a token again: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)
	h.term, h.token, h.watch = term, tok.Token, nil
	return h
}

// TestCrossTenantRoleChangesThatDoNotLower: making an admin owner, or an
// owner admin, leaves B's admin key an admin's: its terminal stays open
// and its token still opens one.
func TestCrossTenantRoleChangesThatDoNotLower(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	h := holdAsAdmin(t, e, e, api.OrgRoleAdmin)
	h.setRole(t, e, api.OrgRoleOwner)
	h.setRole(t, e, api.OrgRoleAdmin)
	h.wantOpen(t)
	conn, _, err := dialTakeover(t, e, h.sb.ID, "", "?token="+h.token)
	if err != nil {
		t.Fatalf("the token after admin to owner to admin: %v", err)
	}
	conn.CloseNow()
}

// TestDemotionAcrossReplicas: B's admin key holds a terminal, a watch
// stream and a token on one server; B is demoted through another sharing
// the Postgres database. The first server ends the terminal and the
// stream on the demotion's notice, and refuses the token, also after B is
// promoted back.
func TestDemotionAcrossReplicas(t *testing.T) {
	rs, _ := newReplicas(t, 2, server.Config{})
	a, b := rs[0], rs[1]
	fakePTY(t, a) // the replicas share the sidecar
	h := holdAsAdmin(t, a, b, api.OrgRoleAdmin)

	h.setRole(t, a, api.OrgRoleMember)
	h.wantEnded(t)
	h.wantTokenRefused(t, b)
	h.setRole(t, a, api.OrgRoleAdmin)
	h.wantTokenRefused(t, b)
}

// TestRecheckDemotions: a demotion a server missed (its listener was
// reconnecting) ends what the demoted admin key holds there once it checks
// the store; a request the key made after the demotion goes on.
func TestRecheckDemotions(t *testing.T) {
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	h := holdAsAdmin(t, e, e, api.OrgRoleAdmin)
	// Demoted behind the server's back, as through another server. The
	// key acts as a member's from its next request: a watch stream it
	// opens now is a member key's, which the recheck leaves alone.
	if _, err := e.Store.(orgs.Store).SetOrgMemberRole(context.Background(), h.orgID, h.member, api.OrgRoleMember); err != nil {
		t.Fatal(err)
	}
	after := openWatch(t, e.URL, h.sb.ID, h.key, "")
	e.Server.RecheckCredentials(context.Background())
	h.wantEnded(t)
	e.exec(e.orgKey(e.KeyA, h.orgID, "").Key, h.sb.ID, "echo still here")
	for {
		// The ended terminal's own entries may come first.
		ev, _ := after.next(t, streamEnd)
		if ev.Operation == "exec" {
			break
		}
		if !strings.HasPrefix(ev.Operation, "takeover_") {
			t.Fatalf("the watch opened after the demotion got %s, want the exec", ev.Operation)
		}
	}
	h.wantTokenRefused(t, e)
}

// TestCrossTenantDemotionEndsAdminSSHKeys: an SSH key B registered in A's
// organization as its admin (which only an admin key may) is deleted by
// B's demotion to member, as by B's removal: the terminal it opened
// through the bastion ends, a token minted for it is refused, and the
// bastion no longer knows it, also after B is promoted back.
func TestCrossTenantDemotionEndsAdminSSHKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{BastionKey: testBastionKey})
	fakePTY(t, e)
	org := e.newOrg(e.KeyA, "a-org")
	e.join(e.KeyA, e.KeyB, org.ID, "b@example.com", api.OrgRoleAdmin)
	keyB := e.orgKey(e.KeyB, org.ID, api.RoleAdmin).Key
	sb := e.create(e.orgKey(e.KeyA, org.ID, "").Key, api.CreateSandboxRequest{})
	line, _ := authorizedKey(t, "b-laptop")
	if resp, body := e.do("POST", "/v1/account/ssh-keys", keyB, api.AddSSHKeyRequest{PublicKey: line}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("B registers an ssh key in the organization: %d %s", resp.StatusCode, body)
	}
	mint := func() (*http.Response, []byte) {
		return e.do("POST", "/v1/bastion/takeover-token", testBastionKey, api.BastionTokenRequest{SandboxID: sb.ID, PublicKey: line})
	}
	var toks [2]api.TakeoverToken
	for i := range toks {
		resp, body := mint()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bastion token: %d %s", resp.StatusCode, body)
		}
		mustUnmarshal(t, body, &toks[i])
	}
	term, _, err := dialTakeover(t, e, sb.ID, "", "?token="+toks[0].Token)
	if err != nil {
		t.Fatalf("takeover with the ssh key's token: %v", err)
	}
	defer term.CloseNow()

	h := adminHold{orgID: org.ID, member: accountID(t, e, e.KeyB)}
	h.setRole(t, e, api.OrgRoleMember)
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	for err == nil {
		_, _, err = term.Read(ctx)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		t.Errorf("the ssh key's terminal after the demotion: %v; want a policy-violation close", err)
	}
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), toks[1].Token, api.ExecRequest{Command: "id"})
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidToken)
	h.setRole(t, e, api.OrgRoleAdmin)
	resp, body = mint()
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
}

// TestCrossTenantDemotionEndsAdminExecStream: a streamed exec of B's admin
// key stops streaming at B's demotion, with an error event that says so
// (403 forbidden: the key is valid, as a member's), while its command runs
// on in the sandbox, as at a revocation.
func TestCrossTenantDemotionEndsAdminExecStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	release := make(chan struct{})
	t.Cleanup(sync.OnceFunc(func() { close(release) })) // a failed test does not hang
	execRunning := make(chan context.Context, 1)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		w.Write([]byte(`{"type":"stdout","data":"started\n"}` + "\n"))
		w.(http.Flusher).Flush()
		execRunning <- r.Context()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write([]byte(`{"type":"stdout","data":"finished\n"}` + "\n" + `{"type":"exit","exit_code":0,"duration_ms":5}` + "\n"))
	}
	org := e.newOrg(e.KeyA, "a-org")
	e.join(e.KeyA, e.KeyB, org.ID, "b@example.com", api.OrgRoleAdmin)
	h := adminHold{
		key: e.orgKey(e.KeyB, org.ID, api.RoleAdmin).Key, orgID: org.ID, member: accountID(t, e, e.KeyB),
		sb: e.create(e.orgKey(e.KeyA, org.ID, "").Key, api.CreateSandboxRequest{}),
	}
	stream := openStream(t, e, "POST", sandboxPath(h.sb.ID, "/exec"), h.key, `{"command":"./long-job"}`, "Accept", api.ContentTypeNDJSON)
	sidecarCtx := <-execRunning

	h.setRole(t, e, api.OrgRoleMember)
	out := readAllWithin(t, stream.Body)
	if !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, api.CodeForbidden) || !strings.Contains(out, "demoted") || strings.Contains(out, "finished") {
		t.Errorf("the exec stream after the demotion: %q; want an error event saying so and nothing more", out)
	}
	if sidecarCtx.Err() != nil {
		t.Error("the sidecar's exec request was cancelled with the stream")
	}
}
