package server_test

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestNotFoundNamesTheID: a named resource that is not there answers
// not_found naming the reference asked for, with a hint, so a script that
// asks for several knows which one is missing. `images get nosuch` said
// "image not found" (images get, rm, logs and log alike).
func TestNotFoundNamesTheID(t *testing.T) {
	t.Parallel()
	e, _ := newImagesEnv(t)
	org := e.newOrg(e.KeyB, "not-found")
	const id = "nosuch0"
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/images/" + id},
		{"DELETE", "/v1/images/" + id},
		{"GET", "/v1/images/" + id + "/logs"},
		{"GET", "/v1/images/" + id + "/log"},
		{"GET", "/v1/sandboxes/" + id},
		{"GET", "/v1/webhooks/" + id},
		{"DELETE", "/v1/webhooks/" + id},
		{"GET", "/v1/mcp-connections/" + id},
		{"DELETE", "/v1/mcp-connections/" + id},
		{"DELETE", "/v1/secrets/" + id},
		{"DELETE", "/v1/api-keys/" + id},
		{"DELETE", "/v1/account/ssh-keys/" + id},
		{"DELETE", "/v1/organizations/" + org.ID + "/members/" + id},
		{"DELETE", "/v1/organizations/" + org.ID + "/invites/" + id},
		{"GET", "/v1/snapshots/" + id},
		{"DELETE", "/v1/snapshots/" + id},
		{"GET", "/v1/volumes/" + id},
		{"DELETE", "/v1/volumes/" + id},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := e.do(tt.method, tt.path, e.KeyB, nil)
			ae := wantError(t, resp, body, 404, api.CodeNotFound)
			if !strings.Contains(ae.Message, id) || ae.Hint == "" {
				t.Errorf("%s %s: %q, hint %q; want the message to name %s, and a hint", tt.method, tt.path, ae.Message, ae.Hint, id)
			}
		})
	}
}
