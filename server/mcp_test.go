package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// mcpCall calls tool over /mcp/ with key and returns its text and isError.
func mcpCall(t *testing.T, e *env, key, tool string, args any) (string, bool) {
	t.Helper()
	a, _ := json.Marshal(args)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a)
	resp, b := e.do("POST", "/mcp/", key, body, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /mcp/ %s: %d %s", tool, resp.StatusCode, b)
	}
	var rpc struct {
		Result *struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
		Error json.RawMessage
	}
	mustUnmarshal(t, b, &rpc)
	if rpc.Result == nil || len(rpc.Result.Content) != 1 {
		t.Fatalf("POST /mcp/ %s: not a tool result: %s", tool, b)
	}
	return rpc.Result.Content[0].Text, rpc.Result.IsError
}

// TestMCPEndpoint: /mcp/ acts as the caller's key, through the same checks
// as the REST API: tenancy, the allowlist, and the 401 without a key.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{Label: "a-label"})

	text, isErr := mcpCall(t, e, e.KeyA, "get_sandbox", map[string]string{"session_id": sb.ID})
	if isErr || !strings.HasPrefix(text, sb.ID+" (status: active") || !strings.Contains(text, "a-label") {
		t.Errorf("A's get_sandbox = %q (isError %v)", text, isErr)
	}

	// B sees A's sandbox exactly as a sandbox that does not exist.
	text, isErr = mcpCall(t, e, e.KeyB, "get_sandbox", map[string]string{"session_id": sb.ID})
	none := model.NewID()
	text2, _ := mcpCall(t, e, e.KeyB, "get_sandbox", map[string]string{"session_id": none})
	if !isErr || strings.Contains(text, "a-label") || strings.ReplaceAll(text, sb.ID, "ID") != strings.ReplaceAll(text2, none, "ID") {
		t.Errorf("B's get_sandbox of A's sandbox = %q (isError %v); of none: %q", text, isErr, text2)
	}
	if text, isErr := mcpCall(t, e, e.KeyB, "exec", map[string]string{"session_id": sb.ID, "command": "id"}); !isErr || !strings.Contains(text, "not found") {
		t.Errorf("B's exec in A's sandbox = %q (isError %v)", text, isErr)
	}

	// The account's allowlist applies to exec over MCP as to the API.
	rules := api.AllowedCommands{Rules: []api.CommandRule{{Command: "echo"}}}
	if resp, body := e.do("PUT", "/v1/account/allowed-commands", e.KeyA, rules); resp.StatusCode != http.StatusOK {
		t.Fatalf("set allowlist: %d %s", resp.StatusCode, body)
	}
	text, isErr = mcpCall(t, e, e.KeyA, "exec", map[string]string{"session_id": sb.ID, "command": "rm -rf /"})
	if !isErr || !strings.HasPrefix(text, "Error [command_not_allowed]: command not allowed: rm ") {
		t.Errorf("exec of a command off the allowlist = %q (isError %v)", text, isErr)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 0 {
		t.Errorf("the sidecar ran %v", reqs)
	}

	resp, body := e.do("POST", "/mcp/", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Content-Type", "application/json")
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeUnauthorized)
	resp, body = e.do("POST", "/mcp/", "bxk_live_nosuchkey", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp/ with a bad key: %d %s", resp.StatusCode, body)
	}
	// A body that is not JSON is JSON-RPC's parse error, in JSON.
	resp, body = e.do("POST", "/mcp/", e.KeyA, "not json", "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":-32700`) || !strings.Contains(string(body), `"id":null`) {
		t.Errorf("POST /mcp/ of a non-JSON body: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := e.do("GET", "/mcp/", e.KeyA, nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp/: %d %s; want 405 (stateless)", resp.StatusCode, body)
	}
}

// TestMCPListSandboxesPages: the hosted /mcp/'s list_sandboxes pages
// through the account's sandboxes with the REST list's cursor, which it
// reads from the in-process answer's Link header.
func TestMCPListSandboxesPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	var ids []string
	for range 3 {
		ids = append(ids, e.create(e.KeyA, api.CreateSandboxRequest{}).ID)
	}
	text, isErr := mcpCall(t, e, e.KeyA, "list_sandboxes", map[string]any{"limit": 2})
	const more = "\n(more: call list_sandboxes with cursor "
	i := strings.Index(text, more)
	if isErr || i < 0 || strings.Count(text[:i], "- ") != 2 {
		t.Fatalf("first page of 2 = %q (isError %v), want 2 sandboxes and a cursor", text, isErr)
	}
	first := text[:i]
	cursor, err := strconv.Unquote(strings.TrimSuffix(text[i+len(more):], " for the next page)"))
	if err != nil {
		t.Fatalf("cursor in %q: %v", text, err)
	}
	text, isErr = mcpCall(t, e, e.KeyA, "list_sandboxes", map[string]any{"limit": 2, "cursor": cursor})
	if isErr || strings.Contains(text, "\n") {
		t.Errorf("second page = %q (isError %v), want one sandbox and no cursor", text, isErr)
	}
	for _, id := range ids {
		if strings.Count(first+text, id) != 1 {
			t.Errorf("sandbox %s is not listed once in the two pages: %q, %q", id, first, text)
		}
	}
}

// TestMCPListImagesPages: the hosted /mcp/'s list_sandbox_images pages
// through the account's images with the REST list's cursor, as
// list_sandboxes does.
func TestMCPListImagesPages(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var imgs []api.Image
	for i := range 3 {
		imgs = append(imgs, api.Image{ID: fmt.Sprintf("img_%024d", i), Status: "ready", CreatedAt: at.Add(time.Duration(i) * time.Second)})
	}
	e := newEnv(t, server.Config{Images: listedImages{imgs: imgs}})
	text, isErr := mcpCall(t, e, e.KeyA, "list_sandbox_images", map[string]any{"limit": 2})
	const more = "\n(more: call list_sandbox_images with cursor "
	i := strings.Index(text, more)
	if isErr || i < 0 || strings.Count(text[:i], "- ") != 2 {
		t.Fatalf("first page of 2 = %q (isError %v), want 2 images and a cursor", text, isErr)
	}
	first := text[:i]
	cursor, err := strconv.Unquote(strings.TrimSuffix(text[i+len(more):], " for the next page)"))
	if err != nil {
		t.Fatalf("cursor in %q: %v", text, err)
	}
	text, isErr = mcpCall(t, e, e.KeyA, "list_sandbox_images", map[string]any{"limit": 2, "cursor": cursor})
	if isErr || strings.Contains(text, "\n") {
		t.Errorf("second page = %q (isError %v), want one image and no cursor", text, isErr)
	}
	for _, img := range imgs {
		if strings.Count(first+text, img.ID) != 1 {
			t.Errorf("image %s is not listed once in the two pages: %q, %q", img.ID, first, text)
		}
	}
}
