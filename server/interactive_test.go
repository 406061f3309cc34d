package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestInteractiveRefusals: an interactive exec is refused before the
// upgrade, as a plain HTTP error, for what POST …/exec refuses too: the
// allowlist (the sftp subsystem as "sftp-server"), a read-only takeover
// token, a bad request.
func TestInteractiveRefusals(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	path := func(req api.InteractiveRequest) string {
		return sandboxPath(sb.ID, "/exec/interactive") + "?" + req.Query().Encode()
	}
	if resp, body := e.do("PUT", "/v1/account/allowed-commands", e.KeyA, `{"rules": ["ls"]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT allowlist: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do("GET", path(api.InteractiveRequest{Command: "rm -rf /workspace"}), e.KeyA, nil)
	wantError(t, resp, body, http.StatusForbidden, api.CodeCommandNotAllowed)
	resp, body = e.do("GET", path(api.InteractiveRequest{Subsystem: api.SubsystemSFTP}), e.KeyA, nil)
	wantError(t, resp, body, http.StatusForbidden, api.CodeCommandNotAllowed)

	resp, body = e.do("GET", sandboxPath(sb.ID, "/exec/interactive"), e.KeyA, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
	resp, body = e.do("GET", sandboxPath(sb.ID, "/exec/interactive")+"?"+url.Values{"subsystem": {"x11"}}.Encode(), e.KeyA, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)

	_, ro, _ := mintToken(t, e, sb.ID, e.KeyA, api.TakeoverTokenRequest{ReadOnly: true})
	resp, body = e.do("GET", path(api.InteractiveRequest{Command: "ls"}), ro.Token, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a read-only token = %d %s; want 403", resp.StatusCode, body)
	}
}
