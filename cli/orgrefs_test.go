package cli

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestOrgMemberByEmail: org set-role and org remove take a member's email
// (any case) as well as an account id; an email of no member is exit 3
// with a hint, and nothing is changed.
func TestOrgMemberByEmail(t *testing.T) {
	isolate(t)
	const orgID, ada = "0f5c8a3e-1111-4222-8333-944445555666", "6f1c0000-aaaa-4bbb-8ccc-dddddddddddd"
	var (
		mu      sync.Mutex
		changed []string
	)
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		changed = append(changed, r.Method+" "+r.PathValue("account"))
		mu.Unlock()
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		replyJSON(200, api.OrganizationMember{AccountID: ada, Email: "ada@example.com", Role: api.OrgRoleAdmin})(w, r)
	}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/organizations": replyJSON(200, []api.Organization{{ID: orgID, Name: "acme", Role: api.OrgRoleOwner}}),
		"GET /v1/organizations/{id}/members": replyJSON(200, []api.OrganizationMember{
			{AccountID: "owner-id", Email: "me@example.com", Role: api.OrgRoleOwner},
			{AccountID: ada, Email: "ada@example.com", Role: api.OrgRoleMember},
		}),
		"PATCH /v1/organizations/{id}/members/{account}":  record,
		"DELETE /v1/organizations/{id}/members/{account}": record,
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	for _, args := range [][]string{
		{"org", "set-role", "acme", "Ada@Example.com", "admin"},
		{"org", "set-role", "acme", ada, "admin"},
		{"org", "remove", "acme", "ada@example.com", "--yes"},
	} {
		if r := runCLI(t, "", args...); r.code != 0 {
			t.Errorf("boxkite %q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r := runCLI(t, "", "org", "remove", "acme", "bob@example.com", "--yes")
	if r.code != exitNotFound || !strings.Contains(r.stderr, "error: bob@example.com is no member of acme\nhint: 'boxkite org members acme' lists the members") {
		t.Errorf("remove a non-member by email: exit %d, stderr %q; want exit 3 and a hint", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"PATCH " + ada, "PATCH " + ada, "DELETE " + ada}; strings.Join(changed, ",") != strings.Join(want, ",") {
		t.Errorf("changes sent: %q, want %q", changed, want)
	}
}
