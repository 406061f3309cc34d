package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// fakeProvider answers the account tools from memory and records the ids
// it was asked about.
type fakeProvider struct {
	Provider // unplanned calls panic, which Call turns into text
	created  []api.CreateSandboxRequest
	deleted  []string
}

func (p *fakeProvider) CreateSandboxes(_ context.Context, req api.CreateSandboxRequest) ([]api.Sandbox, error) {
	p.created = append(p.created, req)
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []api.Sandbox{{ID: "sb-1", Status: api.StatusActive, ExpiresAt: exp}}, nil
}

func (p *fakeProvider) DeleteSandbox(_ context.Context, id string) error {
	p.deleted = append(p.deleted, id)
	if id != "sb-1" {
		return &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "sandbox " + id + " not found"}
	}
	return nil
}

func (p *fakeProvider) ListVolumes(context.Context) ([]api.Volume, error) { return nil, nil }

func (p *fakeProvider) ListImagesPage(context.Context, int, string) ([]api.Image, string, error) {
	return nil, "", errors.New("cannot reach the boxkite server at http://127.0.0.1:1: connection refused")
}

func TestMCPToolSet(t *testing.T) {
	want := []string{
		"create_sandbox", "destroy_sandbox", "get_sandbox", "list_sandboxes",
		"create_sandbox_image", "get_sandbox_image", "list_sandbox_images", "delete_sandbox_image",
		"create_sandbox_volume", "get_sandbox_volume", "list_sandbox_volumes", "delete_sandbox_volume",
		"create_mcp_connection", "list_mcp_connections", "delete_mcp_connection",
		"exec", "lsp_start", "lsp_open", "lsp_completion", "lsp_stop",
		"file_create", "view", "str_replace", "ls", "glob", "grep",
		"pause_sandbox", "resume_sandbox", "snapshot_sandbox", "restore_snapshot", "fork_sandbox",
	}
	ts := MCP(nil, nil)
	var got []string
	for _, tl := range ts {
		got = append(got, tl.Name)
		var s objectSchema
		if err := json.Unmarshal(tl.Schema, &s); err != nil {
			t.Fatalf("%s: schema: %v\n%s", tl.Name, err, tl.Schema)
		}
		sessionScoped := slices.Index(want, tl.Name) >= slices.Index(want, "exec") && tl.Name != "restore_snapshot"
		if _, has := s.Properties["session_id"]; sessionScoped && (!has || !slices.Contains(s.Required, "session_id")) {
			t.Errorf("%s: session_id in properties = %v, required %v; want it required", tl.Name, has, s.Required)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MCP tool names (-want +got):\n%s", diff)
	}
}

func TestMCPTools(t *testing.T) {
	tests := []struct {
		name, tool, args string
		fake             fake
		want             string
		calls            []call
	}{
		{
			name: "exec", tool: "exec", args: `{"session_id":"sb-1","command":"echo hi"}`,
			fake:  fake{exec: func(api.ExecRequest) (*api.ExecResult, error) { return &api.ExecResult{Stdout: "hi\n"}, nil }},
			want:  "hi",
			calls: []call{{"Exec", api.ExecRequest{Command: "echo hi", Timeout: 120}}},
		},
		{
			// MCP has no start_process: the hint names what exec can do.
			name: "exec timeout hint", tool: "exec", args: `{"session_id":"sb-1","command":"sleep 100","timeout":5}`,
			fake: fake{exec: execReturns("", "Command timed out after 5s", api.ExitCodeTimeout)},
			want: "Error (exit code 124):\nCommand timed out after 5s\n\n" +
				"Hint: the command hit its timeout of 5s; pass a larger timeout (max 600) or start it in the background with nohup CMD > out.log 2>&1 & and read out.log later.",
			calls: []call{{"Exec", api.ExecRequest{Command: "sleep 100", Timeout: 5}}},
		},
		{
			name: "view range", tool: "view", args: `{"session_id":"sb-1","path":"a.txt","view_range":[2,3]}`,
			fake: fake{view: func(api.ViewRequest) (*api.ViewResult, error) {
				return &api.ViewResult{Content: "b\nc", Lines: 4}, nil
			}},
			want:  "File: a.txt (lines 2-3 of 4)\n     2\tb\n     3\tc",
			calls: []call{{"View", api.ViewRequest{Path: "a.txt", ViewRange: []int{2, 3}}}},
		},
		{
			name: "view range of doubles", tool: "view", args: `{"session_id":"sb-1","path":"a.txt","view_range":[2.0,3e0]}`,
			fake: fake{view: func(api.ViewRequest) (*api.ViewResult, error) {
				return &api.ViewResult{Content: "b\nc", Lines: 4}, nil
			}},
			want:  "File: a.txt (lines 2-3 of 4)\n     2\tb\n     3\tc",
			calls: []call{{"View", api.ViewRequest{Path: "a.txt", ViewRange: []int{2, 3}}}},
		},
		{
			name: "view an image", tool: "view", args: `{"session_id":"sb-1","path":"shot.png"}`,
			want: "Error: shot.png is an image; view shows text. Use exec (e.g. `file`, `identify`) to inspect it.",
		},
		{
			// MCP's shell tool is exec: the hint names it, not bash_tool.
			name: "file too large", tool: "file_create",
			args: fmt.Sprintf(`{"session_id":"sb-1","path":"big.txt","content":%q}`, strings.Repeat("y", 11<<20)),
			want: fmt.Sprintf("Error: content is %d bytes; the limit is 10 MiB\n", 11<<20) +
				"Hint: write the file in parts: file_create with the first part, then append the rest in smaller pieces with exec (cat >> FILE)",
		},
		{
			name: "view bad range", tool: "view", args: `{"session_id":"sb-1","path":"a.txt","view_range":[2]}`,
			want: "Error: view_range must be two integers, [start_line, end_line]",
		},
		{
			name: "missing session", tool: "ls", args: `{"path":"/"}`,
			want: `Error: ls needs the parameter "session_id"`,
		},
		{
			name: "bad session", tool: "grep", args: `{"session_id":"../x","pattern":"a"}`,
			want: `Error: session_id "../x" is not a valid id`,
		},
		{
			name: "replace all", tool: "str_replace", args: `{"session_id":"sb-1","path":"a","old_str":"x","new_str":"y","replace_all":true}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return &api.StrReplaceResult{Path: "/workspace/a", Replaced: true, Occurrences: 3}, nil
			}},
			want:  "Replaced 3 occurrences in /workspace/a",
			calls: []call{{"StrReplace", api.StrReplaceRequest{Path: "a", OldStr: "x", NewStr: "y", ReplaceAll: true}}},
		},
		{
			name: "replace once", tool: "str_replace", args: `{"session_id":"sb-1","path":"a","old_str":"x","new_str":"y"}`,
			fake: fake{strReplace: func(api.StrReplaceRequest) (*api.StrReplaceResult, error) {
				return &api.StrReplaceResult{Path: "/workspace/a", Replaced: true, Occurrences: 1}, nil
			}},
			want:  "Replaced 1 occurrence in /workspace/a",
			calls: []call{{"StrReplace", api.StrReplaceRequest{Path: "a", OldStr: "x", NewStr: "y"}}},
		},
		{
			name: "lsp open", tool: "lsp_open", args: `{"session_id":"sb-1","lsp_id":"l1","path":"m.py","content":"import os"}`,
			fake:  fake{lspOpen: func(string, api.LSPOpenRequest) error { return nil }},
			want:  "Opened m.py in language server l1 (9 bytes)",
			calls: []call{{"LSPOpen", idReq{"l1", api.LSPOpenRequest{Path: "m.py", Content: "import os"}}}},
		},
		{
			name: "create", tool: "create_sandbox", args: `{"label":"x","lifetime_minutes":5}`,
			want: "Created sandbox sb-1 (status: active, expires_at: 2026-01-02T03:04:05Z)",
		},
		{
			name: "gpu", tool: "create_sandbox", args: `{"gpu_count":1}`,
			want: "Error: GPUs are not supported by this boxkite deployment\nHint: omit gpu_count.",
		},
		{
			name: "destroy", tool: "destroy_sandbox", args: `{"session_id":"sb-1"}`,
			want: "Destroyed sandbox sb-1",
		},
		{
			name: "destroy unknown", tool: "destroy_sandbox", args: `{"session_id":"sb-2"}`,
			want: "Error [not_found]: sandbox sb-2 not found",
		},
		{
			name: "no volumes", tool: "list_sandbox_volumes", args: `{}`,
			want: "No volumes found.",
		},
		{
			name: "server down", tool: "list_sandbox_images", args: `{}`,
			want: "Error: cannot reach the boxkite server at http://127.0.0.1:1: connection refused",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			var bound []string
			ts := MCP(&fakeProvider{}, func(id string) Sandbox { bound = append(bound, id); return &f })
			got := Call(context.Background(), ts, nil, tc.tool, json.RawMessage(tc.args))
			if got != tc.want {
				t.Errorf("%s(%s):\n%s\nwant:\n%s", tc.tool, tc.args, got, tc.want)
			}
			if diff := cmp.Diff(tc.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			for _, id := range bound {
				if id != "sb-1" {
					t.Errorf("bound sandbox %q, want sb-1", id)
				}
			}
		})
	}
}

// create_sandbox_volume with size_gb 0 is refused as the API refuses it;
// before, the 0 was left out of the request and made a 1 GB volume.
func TestCreateVolumeZeroSize(t *testing.T) {
	p := &volumeProvider{}
	got := Call(context.Background(), MCP(p, nil), nil, "create_sandbox_volume", json.RawMessage(`{"label":"v","size_gb":0}`))
	if want := "Error [validation_error]: size_gb must be more than 0, got 0\nHint: omit size_gb for the default of 1 GB"; got != want || len(p.reqs) != 0 {
		t.Errorf("size_gb 0: %q (requests %v), want %q and none", got, p.reqs, want)
	}
	Call(context.Background(), MCP(p, nil), nil, "create_sandbox_volume", json.RawMessage(`{"label":"v"}`))
	Call(context.Background(), MCP(p, nil), nil, "create_sandbox_volume", json.RawMessage(`{"size_gb":2.5}`))
	if want := []api.CreateVolumeRequest{{Label: "v"}, {SizeGB: 2.5}}; !slices.Equal(p.reqs, want) {
		t.Errorf("requests %v, want %v", p.reqs, want)
	}
}

type volumeProvider struct {
	fakeProvider
	reqs []api.CreateVolumeRequest
}

func (p *volumeProvider) CreateVolume(_ context.Context, req api.CreateVolumeRequest) (*api.Volume, error) {
	p.reqs = append(p.reqs, req)
	return &api.Volume{ID: "vol-1", SizeGB: req.SizeGB}, nil
}
