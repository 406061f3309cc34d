package sqlstore_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/orgs"
	"github.com/boxkite/boxkite/server/webhooks"
)

// testOrgs: an organization is an account row with an owner; a key it
// issues a member carries the member's current role when looked up, and
// none once they are removed, which also revokes it; the last owner
// stays, even against two concurrent demotions; an invite works once.
func testOrgs(t *testing.T, newStore storeFactory) {
	ms := newStore(t)(t)
	st := ms.(orgs.Store)
	ctx := t.Context()
	a, b := mustAccount(t, ms, "a@example.com"), mustAccount(t, ms, "b@example.com")
	o := &orgs.Org{ID: model.NewID(), Name: "acme", CreatedAt: base}
	if err := st.CreateOrg(ctx, o, a.ID); err != nil {
		t.Fatal(err)
	}
	if acct, err := ms.AccountByID(ctx, o.ID); err != nil || acct.Email != model.OrgEmail(o.ID) {
		t.Fatalf("the organization's account: %+v, %v", acct, err)
	}
	inv := &orgs.Invite{ID: model.NewID(), OrgID: o.ID, Email: "b@example.com", Role: model.RoleAdmin, TokenHash: "h1", InvitedBy: a.ID, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	if err := st.CreateOrgInvite(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcceptOrgInvite(ctx, "h1", a, base); !errors.Is(err, orgs.ErrEmailMismatch) {
		t.Errorf("accept for another email: %v", err)
	}
	if _, err := st.AcceptOrgInvite(ctx, "h1", b, base.Add(time.Hour)); !errors.Is(err, orgs.ErrInviteExpired) {
		t.Errorf("accept after expiry: %v", err)
	}
	if _, err := st.AcceptOrgInvite(ctx, "h1", b, base); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcceptOrgInvite(ctx, "h1", b, base); !errors.Is(err, orgs.ErrInviteUsed) {
		t.Errorf("second accept: %v", err)
	}

	secret := model.NewAPIKey()
	k := &model.APIKey{ID: model.NewID(), AccountID: o.ID, MemberID: b.ID, Name: "b", Hash: model.HashAPIKey(secret), Prefix: model.DisplayPrefix(secret), Role: model.RoleAdmin, CreatedAt: base}
	if err := st.CreateOrgAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, acct, err := ms.APIKeyByHash(ctx, k.Hash)
	if err != nil || got.MemberID != b.ID || got.MemberRole != model.RoleAdmin || acct.Org == nil || acct.Org.Name != "acme" {
		t.Fatalf("APIKeyByHash = %+v %+v, %v", got, acct, err)
	}
	// B's role changes in turn: only a change that lowers B's admin key to
	// a member's counts a demotion on it, and the count never goes down;
	// the first demotion deletes the SSH key B registered in the
	// organization as an admin.
	ssh0 := &model.SSHKey{ID: model.NewID(), AccountID: o.ID, MemberID: b.ID, Name: "b0", PublicKey: "ssh-ed25519 AAAB", Fingerprint: "SHA256:b0", CreatedAt: base}
	if err := ms.CreateSSHKey(ctx, ssh0); err != nil {
		t.Fatal(err)
	}
	type standing struct {
		Role      string
		Demotions int64
	}
	for _, step := range []struct {
		role    string
		demoted orgs.Demotion
		want    standing // APIKeyRole after the change
	}{
		{model.RoleOwner, orgs.Demotion{}, standing{model.RoleAdmin, 0}},
		{model.RoleAdmin, orgs.Demotion{}, standing{model.RoleAdmin, 0}}, // owner to admin: the key stays an admin's
		{model.RoleMember, orgs.Demotion{Keys: []orgs.DemotedKey{{ID: k.ID, Demotions: 1}}, SSHKeys: []string{ssh0.ID}}, standing{model.RoleMember, 1}},
		{model.RoleMember, orgs.Demotion{}, standing{model.RoleMember, 1}},
		{model.RoleAdmin, orgs.Demotion{}, standing{model.RoleAdmin, 1}}, // a promotion back: the count stays
		{model.RoleOwner, orgs.Demotion{}, standing{model.RoleAdmin, 1}},
		{model.RoleMember, orgs.Demotion{Keys: []orgs.DemotedKey{{ID: k.ID, Demotions: 2}}}, standing{model.RoleMember, 2}},
	} {
		demoted, err := st.SetOrgMemberRole(ctx, o.ID, b.ID, step.role)
		if err != nil {
			t.Fatalf("SetOrgMemberRole %s: %v", step.role, err)
		}
		if diff := cmp.Diff(step.demoted, demoted, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("made %s, what the change ended (-want +got):\n%s", step.role, diff)
		}
		role, n, err := ms.APIKeyRole(ctx, k.ID, base)
		if diff := cmp.Diff(step.want, standing{role, n}); err != nil || diff != "" {
			t.Errorf("made %s, APIKeyRole (-want +got):\n%s%v", step.role, diff, err)
		}
		if got, _, _ := ms.APIKeyByHash(ctx, k.Hash); got.MemberRole != step.role || got.Demotions != step.want.Demotions {
			t.Errorf("made %s, APIKeyByHash MemberRole %q Demotions %d", step.role, got.MemberRole, got.Demotions)
		}
	}
	if got, err := ms.KeyDemotions(ctx, []string{k.ID, "no-such-key"}); err != nil || !cmp.Equal(got, map[string]int64{k.ID: 2}) {
		t.Errorf("KeyDemotions = %v, %v; want only B's key's, 2", got, err)
	}
	if _, err := ms.SSHKeyByFingerprint(ctx, ssh0.Fingerprint); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("the SSH key B registered before the demotion: %v; want it deleted", err)
	}
	ssh := &model.SSHKey{ID: model.NewID(), AccountID: o.ID, MemberID: b.ID, Name: "b", PublicKey: "ssh-ed25519 AAAA", Fingerprint: "SHA256:b", CreatedAt: base}
	if err := ms.CreateSSHKey(ctx, ssh); err != nil {
		t.Fatal(err)
	}
	// B's webhook of the organization (with a pending delivery) goes with
	// B; A's stays.
	ws := ms.(webhooks.Store)
	hookB := &webhooks.Subscription{ID: model.NewID(), AccountID: o.ID, MemberID: b.ID, URL: "https://b.example.com/in", EventTypes: []string{"audit_log.entry"}, Secret: "s", Active: true, CreatedAt: base}
	hookA := &webhooks.Subscription{ID: model.NewID(), AccountID: o.ID, MemberID: a.ID, URL: "https://a.example.com/in", EventTypes: []string{"audit_log.entry"}, Secret: "s", Active: true, CreatedAt: base}
	for _, h := range []*webhooks.Subscription{hookB, hookA} {
		if err := ws.CreateWebhook(ctx, h, 20); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.EnqueueWebhookDeliveries(ctx, []*webhooks.Delivery{{
		ID: model.NewID(), WebhookID: hookB.ID, AccountID: o.ID, EventID: "ev", EventType: "audit_log.entry",
		Payload: []byte(`{}`), Status: webhooks.StatusPending, NextAttemptAt: base, CreatedAt: base,
	}}); err != nil {
		t.Fatal(err)
	}
	revoked, err := st.RemoveOrgMember(ctx, o.ID, b.ID, base)
	if err != nil || len(revoked) != 2 || revoked[0] != k.ID || revoked[1] != ssh.ID {
		t.Fatalf("RemoveOrgMember = %v, %v", revoked, err)
	}
	if role, _, err := ms.APIKeyRole(ctx, k.ID, base); err != nil || role != "" {
		t.Errorf("after removal, APIKeyRole = %q, %v; want none", role, err)
	}
	if hooks, err := ws.Webhooks(ctx, o.ID); err != nil || len(hooks) != 1 || hooks[0].ID != hookA.ID || hooks[0].MemberID != a.ID {
		t.Errorf("the organization's webhooks after removing B: %+v, %v (want A's only)", hooks, err)
	}
	if claims, err := ws.ClaimWebhookDeliveries(ctx, "x", base.Add(time.Minute), base.Add(2*time.Minute), 10); err != nil || len(claims) != 0 {
		t.Errorf("deliveries of B's webhook after removing B: %+v, %v", claims, err)
	}
	if got, _, _ := ms.APIKeyByHash(ctx, k.Hash); got.MemberRole != "" || got.RevokedAt == nil {
		t.Errorf("removed member's key: %+v", got)
	}
	if _, err := ms.SSHKeyByFingerprint(ctx, "SHA256:b"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("removed member's ssh key: %v", err)
	}
	if err := st.CreateOrgAPIKey(ctx, &model.APIKey{ID: model.NewID(), AccountID: o.ID, MemberID: b.ID, Hash: "x", Prefix: "p", Role: model.RoleMember, CreatedAt: base}); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("a key for a non-member: %v", err)
	}

	// Two owners demoting each other at once: one stays owner.
	if err := st.CreateOrgInvite(ctx, &orgs.Invite{ID: model.NewID(), OrgID: o.ID, Email: "b@example.com", Role: model.RoleOwner, TokenHash: "h2", InvitedBy: a.ID, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AcceptOrgInvite(ctx, "h2", b, base); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, id := range []string{a.ID, b.ID} {
		wg.Go(func() { _, errs[i] = st.SetOrgMemberRole(ctx, o.ID, id, model.RoleMember) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || (!errors.Is(errs[0], orgs.ErrLastOwner) && !errors.Is(errs[1], orgs.ErrLastOwner)) {
		t.Errorf("concurrent demotions: %v", errs)
	}
	mems, err := st.OrgMembers(ctx, o.ID)
	if err != nil || len(mems) != 2 || mems[0].Role != model.RoleOwner {
		t.Errorf("members after: %+v, %v", mems, err)
	}
	if got, err := st.OrgsOf(ctx, b.ID); err != nil || len(got) != 1 || got[0].Org.ID != o.ID {
		t.Errorf("OrgsOf(b) = %+v, %v", got, err)
	}
}
