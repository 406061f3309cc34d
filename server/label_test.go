package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestLabelsAreUnique: a label names one sandbox among an account's active
// ones (issue 18); a destroyed sandbox frees it, and another account's
// does not hold it.
func TestLabelsAreUnique(t *testing.T) {
	e := newEnv(t, server.Config{})
	first := e.create(e.KeyA, api.CreateSandboxRequest{Label: "demo"})

	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "demo"})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"code":"conflict"`) ||
		!strings.Contains(string(body), "boxkite session rm demo") {
		t.Errorf("a second demo = %d %s; want 409 conflict with a hint", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "pair", Count: 2})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a label with count 2 = %d %s; want 422", resp.StatusCode, body)
	}
	// Another account may use the label.
	e.create(e.KeyB, api.CreateSandboxRequest{Label: "demo"})

	if resp, body := e.do("DELETE", sandboxPath(first.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if again := e.create(e.KeyA, api.CreateSandboxRequest{Label: "demo"}); again.Label != "demo" {
		t.Errorf("after the first demo went, a new one = %+v", again)
	}
}
