package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestLabelRefused: the label of a sandbox, volume, MCP connection or
// snapshot with a control character (an ESC repaints the terminal that
// lists it) or only whitespace is refused, 422 naming the field, as an API
// key's name is; they were stored. Nothing is created.
func TestLabelRefused(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	const esc = "label contains the control character U+001B; it must be printable text"
	const blank = "label must not be only whitespace"
	for _, tt := range []struct{ path, body, msg string }{
		{"/v1/sandboxes", `{"label":"\u001b[31m"}`, esc},
		{"/v1/sandboxes", `{"label":" "}`, blank},
		{"/v1/volumes", `{"label":"\u001b[31m"}`, esc},
		{"/v1/volumes", `{"label":"\t "}`, "label contains the control character U+0009; it must be printable text"},
		{"/v1/volumes", `{"label":"  "}`, blank},
		{"/v1/mcp-connections", `{"label":"\u001b[31m","catalog_id":"github"}`, esc},
		{"/v1/mcp-connections", `{"label":" ","catalog_id":"github"}`, blank},
		{"/v1/mcp-connections", `{"label":"x\u009b","catalog_id":"github"}`, "label contains the control character U+009B; it must be printable text"},
		{"/v1/sandboxes/" + sb.ID + "/snapshots", `{"label":"\u001b[31m"}`, esc},
	} {
		resp, body := e.do("POST", tt.path, e.KeyA, tt.body)
		ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
		if ae.Message != tt.msg || ae.Hint != api.LabelHint {
			t.Errorf("POST %s %s: %q, hint %q; want %q", tt.path, tt.body, ae.Message, ae.Hint, tt.msg)
		}
	}
	for _, path := range []string{"/v1/volumes", "/v1/mcp-connections", "/v1/snapshots"} {
		resp, body := e.do("GET", path, e.KeyA, nil)
		if resp.StatusCode != http.StatusOK || string(body) != "[]" && string(body) != "[]\n" {
			t.Errorf("GET %s after the refusals: %d %s, want none", path, resp.StatusCode, body)
		}
	}
	var sbs []api.Sandbox
	resp, body := e.do("GET", "/v1/sandboxes", e.KeyA, nil)
	if err := json.Unmarshal(body, &sbs); resp.StatusCode != http.StatusOK || err != nil || len(sbs) != 1 {
		t.Errorf("sandboxes after the refusals: %d %s, want the one", resp.StatusCode, body)
	}
}
