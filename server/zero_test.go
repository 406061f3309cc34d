package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestExplicitZeroRefused: where 0 is meaningless an explicit 0 is a 422
// that names the field and its range, while leaving the field out (or
// null) still takes the default. Before, 0 silently meant the default.
func TestExplicitZeroRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for _, tc := range []struct{ path, body, field, msg, hint string }{
		{"/v1/sandboxes", `{"count":0}`, "count", "count must be between 1 and 10, got 0", "omit count"},
		{sandboxPath(sb.ID, "/fork"), `{"count":0}`, "count", "count must be between 1 and 10, got 0", "omit count"},
		{"/v1/volumes", `{"size_gb":0}`, "size_gb", "size_gb must be more than 0", "omit size_gb"},
		{sandboxPath(sb.ID, "/http-request"), `{"url":"http://127.0.0.1:1/","timeout":0}`, "timeout", "timeout must be 1 to 60 seconds, got 0", "omit timeout"},
	} {
		resp, body := e.do("POST", tc.path, e.KeyA, tc.body)
		ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
		if !strings.HasPrefix(ae.Message, tc.msg) || !strings.HasPrefix(ae.Hint, tc.hint) || !strings.Contains(string(body), `"`+tc.field+`"`) {
			t.Errorf("POST %s %s: %s", tc.path, tc.body, body)
		}
	}
	if n := len(e.Driver.Created()); n != 1 {
		t.Errorf("driver.Create called %d times, want 1 (the setup's)", n)
	}
	// Absent or null: the default (one sandbox, one fork).
	for _, body := range []string{`{}`, `{"count":null}`} {
		if resp, b := e.do("POST", "/v1/sandboxes", e.KeyA, body); resp.StatusCode != http.StatusCreated || !strings.HasPrefix(string(b), "{") {
			t.Errorf("create %s: %d %s", body, resp.StatusCode, b)
		}
	}
}
