package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// orgHooks is an organization with an admin key, two members' keys and
// a webhook of each, plus one from before migration 0297 (no member).
type orgHooks struct {
	e                          *env
	org                        api.Organization
	admin, member, other       string
	hookA, hookB, hookC, hookO api.Webhook
}

func newOrgHooks(t *testing.T) *orgHooks {
	e := newEnv(t, server.Config{})
	o := &orgHooks{e: e, org: e.newOrg(e.KeyA, "acme")}
	o.admin = e.orgKey(e.KeyA, o.org.ID, "").Key
	e.join(e.KeyA, e.KeyB, o.org.ID, "b@example.com", api.OrgRoleMember)
	o.member = e.orgKey(e.KeyB, o.org.ID, "").Key
	_, keyC := e.addAccount("c@example.com", model.RoleAdmin)
	e.join(e.KeyA, keyC, o.org.ID, "c@example.com", api.OrgRoleMember)
	o.other = e.orgKey(keyC, o.org.ID, "").Key
	o.hookA, o.hookB, o.hookC = o.hook(t, o.admin, "a"), o.hook(t, o.member, "b"), o.hook(t, o.other, "c")
	// One from before the creator was recorded: no member.
	_, body := e.do("GET", "/v1/account", o.admin, nil)
	var acct api.Account
	mustUnmarshal(t, body, &acct)
	old := &webhooks.Subscription{
		ID: model.NewID(), AccountID: acct.ID, URL: "https://old.example.com/in", EventTypes: []string{api.EventAuditLogEntry},
		PayloadFormat: api.PayloadBoxkiteV1, Secret: "whsec_old", Active: true, CreatedAt: time.Now(),
	}
	if err := e.Store.(webhooks.Store).CreateWebhook(t.Context(), old, 20); err != nil {
		t.Fatal(err)
	}
	o.hookO = old.ToAPI()
	return o
}

func (o *orgHooks) hook(t *testing.T, key, name string) api.Webhook {
	t.Helper()
	resp, body := o.e.do("POST", "/v1/webhooks", key, api.CreateWebhookRequest{URL: "https://" + name + ".example.com/in", EventTypes: []string{api.EventAuditLogEntry}})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%s's webhook: %d %s", name, resp.StatusCode, body)
	}
	var h api.Webhook
	mustUnmarshal(t, body, &h)
	return h
}

// listed is the ids GET /v1/webhooks shows key.
func (o *orgHooks) listed(t *testing.T, key string) []string {
	t.Helper()
	resp, body := o.e.do("GET", "/v1/webhooks", key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list webhooks: %d %s", resp.StatusCode, body)
	}
	var hs []api.Webhook
	mustUnmarshal(t, body, &hs)
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.ID
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(hs ...api.Webhook) []string {
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.ID
	}
	slices.Sort(ids)
	return ids
}

// orgHookRows is how a member-role key of the organization is answered
// for each webhook route naming a webhook it did not create: 404 exactly
// as for no webhook, reads and actions alike (an id it may not see does
// not exist for it). A webhook route without a row fails
// TestCrossTenantOrgWebhooks.
var orgHookRows = map[string]struct {
	method, path string // path with {id}
	want         int
}{
	"POST /v1/webhooks":                                         {},
	"GET /v1/webhooks":                                          {},
	"GET /v1/webhooks/{id}":                                     {"GET", "/v1/webhooks/{id}", http.StatusNotFound},
	"GET /v1/webhooks/{id}/deliveries":                          {"GET", "/v1/webhooks/{id}/deliveries", http.StatusNotFound},
	"POST /v1/webhooks/{id}/test":                               {"POST", "/v1/webhooks/{id}/test", http.StatusNotFound},
	"POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver": {"POST", "/v1/webhooks/{id}/deliveries/d1/redeliver", http.StatusNotFound},
	"DELETE /v1/webhooks/{id}":                                  {"DELETE", "/v1/webhooks/{id}", http.StatusNotFound},
}

// TestCrossTenantOrgWebhooks: within an organization, a member-role key
// sees and manages only the webhooks its holder created (list, get,
// deliveries, test, redeliver, delete); another's is 404 on every route,
// as for none, and is left as it was. An admin key sees and
// manages all of the organization's, those from before migration 0297
// (no creator) too, which a member key never sees. Removing a member
// deletes the webhooks they created, so the organization's events stop
// reaching their receiver.
func TestCrossTenantOrgWebhooks(t *testing.T) {
	t.Parallel()
	o := newOrgHooks(t)
	e := o.e
	if got, want := o.listed(t, o.member), sortedIDs(o.hookB); !slices.Equal(got, want) {
		t.Errorf("the member's list = %v, want only its own %v", got, want)
	}
	if got, want := o.listed(t, o.admin), sortedIDs(o.hookA, o.hookB, o.hookC, o.hookO); !slices.Equal(got, want) {
		t.Errorf("the admin's list = %v, want all %v", got, want)
	}
	for _, pattern := range e.Server.Routes() {
		if !strings.Contains(pattern, "/v1/webhooks") {
			continue
		}
		row, ok := orgHookRows[pattern]
		if !ok {
			t.Errorf("webhook route %q has no row in orgHookRows: add one", pattern)
			continue
		}
		if row.want == 0 {
			continue
		}
		for _, c := range []struct {
			name, key string
			hook      api.Webhook
		}{{"member, admin's", o.member, o.hookA}, {"member, other member's", o.member, o.hookC}, {"member, before 0297", o.other, o.hookO}} {
			resp, body := e.do(row.method, strings.ReplaceAll(row.path, "{id}", c.hook.ID), c.key, nil)
			ae := wantError(t, resp, body, row.want, api.CodeNotFound)
			none := model.NewID()
			_, body2 := e.do(row.method, strings.ReplaceAll(row.path, "{id}", none), c.key, nil)
			ae2 := apiError(t, body2)
			if ae == nil || ae2 == nil || strings.ReplaceAll(ae.Message, c.hook.ID, "ID") != strings.ReplaceAll(ae2.Message, none, "ID") || ae.Hint != ae2.Hint {
				t.Errorf("%s %s: 404 differs from one for no webhook:\n%+v\n%+v", pattern, c.name, ae, ae2)
			}
			if strings.Contains(string(body), c.hook.URL) {
				t.Errorf("%s %s: the answer shows the webhook's URL: %s", pattern, c.name, body)
			}
		}
	}
	orgHooksManaged(t, o)
}

// orgHooksManaged: what a member key does with its own webhooks and an
// admin key with anyone's, and the removal of a member.
func orgHooksManaged(t *testing.T, o *orgHooks) {
	e := o.e
	for _, c := range []struct {
		name, key string
		hook      api.Webhook
	}{{"member, its own", o.member, o.hookB}, {"admin, a member's", o.admin, o.hookC}, {"admin, before 0297", o.admin, o.hookO}} {
		for _, r := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/v1/webhooks/" + c.hook.ID, http.StatusOK},
			{"POST", "/v1/webhooks/" + c.hook.ID + "/test", http.StatusAccepted},
			{"GET", "/v1/webhooks/" + c.hook.ID + "/deliveries", http.StatusOK},
		} {
			if resp, body := e.do(r.method, r.path, c.key, nil); resp.StatusCode != r.want {
				t.Errorf("%s: %s %s: %d %s", c.name, r.method, r.path, resp.StatusCode, body)
			}
		}
	}
	hookB2 := o.hook(t, o.member, "b2")
	if resp, body := e.do("DELETE", "/v1/webhooks/"+hookB2.ID, o.member, nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("member deleting their own webhook: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("DELETE", "/v1/webhooks/"+o.hookC.ID, o.admin, nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("admin deleting a member's webhook: %d %s", resp.StatusCode, body)
	}
	bID := accountID(t, e, e.KeyB)
	if resp, body := e.do("DELETE", "/v1/organizations/"+o.org.ID+"/members/"+bID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("remove B: %d %s", resp.StatusCode, body)
	}
	if got, want := o.listed(t, o.admin), sortedIDs(o.hookA, o.hookO); !slices.Equal(got, want) {
		t.Errorf("the organization's webhooks after removing B = %v, want %v", got, want)
	}
}

// TestOrgWebhookLimitHint: a member key that meets the organization's
// limit of 20 subscriptions, while its list shows only its holder's, is
// told that the others count too and who can delete them.
func TestOrgWebhookLimitHint(t *testing.T) {
	t.Parallel()
	o := newOrgHooks(t) // 4 of the organization's subscriptions
	for i := range 16 {
		o.hook(t, o.admin, fmt.Sprintf("more%d", i))
	}
	resp, body := o.e.do("POST", "/v1/webhooks", o.member, api.CreateWebhookRequest{URL: "https://late.example.com/in", EventTypes: []string{api.EventAuditLogEntry}})
	ae := wantError(t, resp, body, http.StatusTooManyRequests, api.CodeWebhookLimitReached)
	if ae != nil && (!strings.Contains(ae.Hint, "other members") || !strings.Contains(ae.Hint, "admin key")) {
		t.Errorf("the member's hint says nothing of the webhooks it cannot list: %q", ae.Hint)
	}
	resp, body = o.e.do("POST", "/v1/webhooks", o.admin, api.CreateWebhookRequest{URL: "https://late.example.com/in", EventTypes: []string{api.EventAuditLogEntry}})
	if ae := wantError(t, resp, body, http.StatusTooManyRequests, api.CodeWebhookLimitReached); ae != nil && ae.Hint != "delete one with `boxkite webhooks rm ID`" {
		t.Errorf("the admin's hint changed: %q", ae.Hint)
	}
}

// TestOrgWebhookCreatedBy: a webhook says which member created it
// (created_by: their account_id in the organization's members list), in
// the list, the get and the create's answer; one from before migration
// 0297 and a personal account's say no one.
func TestOrgWebhookCreatedBy(t *testing.T) {
	t.Parallel()
	o := newOrgHooks(t)
	e := o.e
	resp, body := e.do("GET", "/v1/organizations/"+o.org.ID+"/members", o.admin, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("members: %d %s", resp.StatusCode, body)
	}
	var members []api.OrganizationMember
	mustUnmarshal(t, body, &members)
	byEmail := map[string]string{}
	for _, m := range members {
		byEmail[m.Email] = m.AccountID
	}
	want := map[string]string{
		o.hookA.ID: accountID(t, e, e.KeyA), o.hookB.ID: byEmail["b@example.com"],
		o.hookC.ID: byEmail["c@example.com"], o.hookO.ID: "",
	}
	if want[o.hookB.ID] == "" || want[o.hookC.ID] == "" || want[o.hookA.ID] == want[o.hookB.ID] {
		t.Fatalf("members %+v do not name the test's three people", members)
	}
	if o.hookB.CreatedBy != want[o.hookB.ID] {
		t.Errorf("the create's answer: created_by = %q, want %q", o.hookB.CreatedBy, want[o.hookB.ID])
	}
	_, body = e.do("GET", "/v1/webhooks", o.admin, nil)
	var hs []api.Webhook
	mustUnmarshal(t, body, &hs)
	for _, h := range hs {
		if h.CreatedBy != want[h.ID] {
			t.Errorf("listed %s: created_by = %q, want %q", h.URL, h.CreatedBy, want[h.ID])
		}
		_, body := e.do("GET", "/v1/webhooks/"+h.ID, o.admin, nil)
		var got api.Webhook
		mustUnmarshal(t, body, &got)
		if got.CreatedBy != want[h.ID] {
			t.Errorf("get %s: created_by = %q, want %q", h.URL, got.CreatedBy, want[h.ID])
		}
	}
	personal := o.hook(t, e.KeyA, "personal")
	if personal.CreatedBy != "" {
		t.Errorf("a personal account's webhook: created_by = %q, want none", personal.CreatedBy)
	}
}
