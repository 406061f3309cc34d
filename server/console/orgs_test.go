package console_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/console"
	"github.com/boxkite/boxkite/server/servertest"
)

// orgMember makes srv's account the owner of a new organization and
// email (signed up with password) one of its admins, and returns the
// organization, the member's account id and an admin key of the
// organization held by them.
func orgMember(t *testing.T, srv *servertest.Server, name, email, password string) (org api.Organization, memberID, orgKey string) {
	t.Helper()
	must := func(resp *http.Response, body []byte, want int, what string) {
		t.Helper()
		if resp.StatusCode != want {
			t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
		}
	}
	resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/v1/organizations", api.CreateOrganizationRequest{Name: name})
	must(resp, body, http.StatusCreated, "create organization")
	mustJSON(t, body, &org)
	resp, body = apiCall(t, srv.BaseURL, srv.APIKey, "POST", "/v1/organizations/"+org.ID+"/invites", api.CreateInviteRequest{Email: email, Role: "admin"})
	must(resp, body, http.StatusCreated, "invite")
	var inv api.OrganizationInvite
	mustJSON(t, body, &inv)

	resp, body = apiCall(t, srv.BaseURL, "", "POST", "/v1/auth/signup", api.Credentials{Email: email, Password: password})
	must(resp, body, http.StatusCreated, "signup")
	var tok api.TokenResponse
	mustJSON(t, body, &tok)
	resp, body = apiCall(t, srv.BaseURL, tok.AccessToken, "POST", "/v1/organizations/accept-invite", api.AcceptInviteRequest{Token: inv.Token})
	must(resp, body, http.StatusOK, "accept invite")
	resp, body = apiCall(t, srv.BaseURL, tok.AccessToken, "POST", "/v1/organizations/"+org.ID+"/api-keys", api.CreateAPIKeyRequest{Name: "cli", Role: "admin"})
	must(resp, body, http.StatusCreated, "organization key")
	var key api.APIKeyCreated
	mustJSON(t, body, &key)
	return org, tok.Account.ID, key.Key
}

// openLink signs a new browser in with a one-time link minted with key.
func openLink(t *testing.T, base, key string) *browser {
	t.Helper()
	resp, body := apiCall(t, base, key, "POST", "/ui/links", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /ui/links: %d %s", resp.StatusCode, body)
	}
	var link console.LinkResponse
	mustJSON(t, body, &link)
	b := newBrowser(t, base)
	if resp, _ := b.do("GET", link.Path, nil, "Origin", ""); resp.StatusCode != http.StatusSeeOther || b.cookie == nil {
		t.Fatalf("open link: %d, cookie %v", resp.StatusCode, b.cookie)
	}
	resp, body = b.do("GET", "/ui/session", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui/session: %d %s", resp.StatusCode, body)
	}
	var info console.SessionInfo
	mustJSON(t, body, &info)
	b.csrf = info.CSRFToken
	return b
}

// TestSignOutAfterDemotion: a console session of an organization's admin
// whose role is lowered to member (its key then acts as a member key,
// which may not manage keys) still signs out: the key is revoked and the
// cookie, replayed, is refused. The member key may revoke itself only.
func TestSignOutAfterDemotion(t *testing.T) {
	srv := servertest.New(t)
	org, memberID, orgKey := orgMember(t, srv, "acme", "mia@example.com", "correct horse")
	b := openLink(t, srv.BaseURL, orgKey)
	ck := b.cookie

	resp, body := apiCall(t, srv.BaseURL, srv.APIKey, "PATCH", "/v1/organizations/"+org.ID+"/members/"+memberID, api.UpdateMemberRequest{Role: "member"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("demote: %d %s", resp.StatusCode, body)
	}
	// Demoted, the session cannot revoke another key of the organization.
	resp, body = apiCall(t, srv.BaseURL, orgKey, "GET", "/v1/account", nil)
	var acct api.Account
	mustJSON(t, body, &acct)
	if resp.StatusCode != http.StatusOK || acct.APIKey == nil {
		t.Fatalf("GET /v1/account with the organization key: %d %s", resp.StatusCode, body)
	}
	resp, body = b.do("DELETE", "/ui/api/v1/api-keys/"+acct.APIKey.ID, nil)
	if resp.StatusCode != http.StatusForbidden || errCode(t, body) != api.CodeForbidden {
		t.Fatalf("a member session revoking another key: %d %s, want 403", resp.StatusCode, body)
	}

	resp, body = b.do("DELETE", "/ui/session", nil)
	if resp.StatusCode != http.StatusNoContent || b.cookie != nil {
		t.Fatalf("sign out after demotion: %d %s, cookie %v", resp.StatusCode, body, b.cookie)
	}
	b.cookie = ck
	for _, path := range []string{"/ui/session", "/ui/api/v1/sandboxes"} {
		if resp, body := b.do("GET", path, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with the signed-out cookie: %d %s, want 401", path, resp.StatusCode, body)
		}
	}
	if resp, body := apiCall(t, srv.BaseURL, orgKey, "GET", "/v1/account", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the member's other key after the sign-out: %d %s, want it untouched", resp.StatusCode, body)
	}
}

// TestOrganizationSession: a session opened with a key of an organization
// says which organization it acts for (its account's email is only
// "org:<id>"), and one of a person's own account names no organization.
func TestOrganizationSession(t *testing.T) {
	srv := servertest.New(t)
	org, memberID, orgKey := orgMember(t, srv, "Acme <b>", "lin@example.com", "correct horse")
	b := openLink(t, srv.BaseURL, orgKey)
	_, body := b.do("GET", "/ui/session", nil)
	var info console.SessionInfo
	mustJSON(t, body, &info)
	want := &api.AccountOrganization{ID: org.ID, Name: "Acme <b>", Role: api.OrgRoleAdmin, MemberID: memberID}
	if info.AccountID != org.ID || !cmp.Equal(info.Organization, want) {
		t.Errorf("organization session = %s, want organization %+v", body, want)
	}

	personal := newBrowser(t, srv.BaseURL)
	personal.signIn("lin@example.com", "correct horse")
	_, body = personal.do("GET", "/ui/session", nil)
	info = console.SessionInfo{}
	mustJSON(t, body, &info)
	if info.AccountID != memberID || info.Email != "lin@example.com" || info.Organization != nil {
		t.Errorf("personal session = %s, want lin's own account", body)
	}
}
