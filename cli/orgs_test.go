package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestOrgSwitchHintIsCopyable: the note after org create and org accept
// names a command the user can paste into a shell as it is: the name when
// the shell leaves it one argument, the id otherwise (spaces, quotes,
// a leading '-').
func TestOrgSwitchHintIsCopyable(t *testing.T) {
	isolate(t)
	const id = "0f5c8a3e-1111-4222-8333-944445555666"
	tests := []struct{ name, want string }{
		{"acme", "'boxkite org switch acme'"},
		{"acme ü", "'boxkite org switch " + id + "'"},
		{`it's "ours"`, "'boxkite org switch " + id + "'"},
		{"-rf", "'boxkite org switch " + id + "'"},
		{"a;b", "'boxkite org switch " + id + "'"},
	}
	for _, tt := range tests {
		o := api.Organization{ID: id, Name: tt.name, Role: api.OrgRoleMember}
		srv := fakeAPI(t, map[string]http.HandlerFunc{
			"POST /v1/organizations":               replyJSON(201, o),
			"POST /v1/organizations/accept-invite": replyJSON(200, o),
			"GET /v1/organizations":                replyJSON(200, []api.Organization{o}),
		})
		t.Setenv(envURL, srv.URL)
		t.Setenv(envAPIKey, "bxk_live_test")
		for _, args := range [][]string{{"org", "create", "--", tt.name}, {"org", "accept", "tok"}} {
			r := runCLI(t, "", args...)
			if r.code != 0 || !strings.Contains(r.stdout, "act for it with "+tt.want+"\n") {
				t.Errorf("boxkite %q (name %q): exit %d, stdout %q; want %s", args, tt.name, r.code, r.stdout, tt.want)
			}
		}
	}
}

// TestOrgSwitchHintAmbiguousName: organization names are not unique; when
// the caller has another organization of the same name, the note names
// the new one by id, since 'boxkite org switch NAME' would be refused as
// ambiguous.
func TestOrgSwitchHintAmbiguousName(t *testing.T) {
	isolate(t)
	const id = "0f5c8a3e-1111-4222-8333-944445555666"
	o := api.Organization{ID: id, Name: "acme", Role: api.OrgRoleOwner}
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"POST /v1/organizations": replyJSON(201, o),
		"GET /v1/organizations":  replyJSON(200, []api.Organization{{ID: "older-id", Name: "acme"}, o}),
	})
	t.Setenv(envURL, srv.URL)
	t.Setenv(envAPIKey, "bxk_live_test")
	r := runCLI(t, "", "org", "create", "acme")
	if want := "act for it with 'boxkite org switch " + id + "'\n"; r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("org create acme (a second acme): exit %d, stdout %q; want %q", r.code, r.stdout, want)
	}
}
