package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// registerSSHKey adds a fresh SSH key with key and returns its
// authorized_keys line.
func registerSSHKey(t *testing.T, e *env, key string) string {
	t.Helper()
	line, _ := authorizedKey(t, "")
	if resp, body := e.do("POST", "/v1/account/ssh-keys", key, api.AddSSHKeyRequest{PublicKey: line}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("add ssh key: %d %s", resp.StatusCode, body)
	}
	return line
}

// bastionTenancy: the bastion asking with B's registered SSH key about
// A's destroyed sandbox gets the 404 of one that does not exist, not the
// 409 that tells A its sandbox is destroyed (the matrix's bastion row asks
// about A's active one).
func bastionTenancy(t *testing.T, e *env, aKey, bSSH string) {
	t.Helper()
	gone := e.create(aKey, api.CreateSandboxRequest{})
	if resp, body := e.do("DELETE", sandboxPath(gone.ID), aKey, nil); resp.StatusCode >= 300 {
		t.Fatalf("destroy A's sandbox: %d %s", resp.StatusCode, body)
	}
	none := model.NewID()
	var msgs [2]string
	for i, id := range []string{gone.ID, none} {
		resp, body := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, api.BastionTokenRequest{SandboxID: id, PublicKey: bSSH})
		ae := wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
		msgs[i] = strings.ReplaceAll(ae.Message+" "+ae.Hint, id, "ID")
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the bastion with B's key: A's destroyed sandbox answers %q, none %q", msgs[0], msgs[1])
	}
}
