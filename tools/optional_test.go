package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// httpFake is a Sandbox that also brokers HTTP requests.
type httpFake struct {
	fake
	got []api.HTTPRequest
	ans func(api.HTTPRequest) (*api.HTTPResponse, error)
}

func (f *httpFake) HTTPRequest(_ context.Context, r api.HTTPRequest) (*api.HTTPResponse, error) {
	f.got = append(f.got, r)
	return f.ans(r)
}

func TestEnabled(t *testing.T) {
	ts, err := Enabled([]string{"http_request", "http_request"})
	if err != nil || len(ts) != 1 || ts[0].Name != "http_request" {
		t.Fatalf("Enabled = %v, %v", ts, err)
	}
	if ts, err := Enabled(nil); err != nil || len(ts) != 0 {
		t.Errorf("Enabled(nil) = %v, %v", ts, err)
	}
	if _, err := Enabled([]string{"bogus"}); err == nil || !strings.Contains(err.Error(), "http_request") {
		t.Errorf("Enabled(bogus) = %v", err)
	}
	// Opt-in tools stay out of the default sets and of MCP unless given.
	for _, t2 := range append(All(), MCP(nil, nil)...) {
		if t2.Name == "http_request" {
			t.Error("http_request is on by default")
		}
	}
	if m := MCP(nil, nil, ts...); m[len(m)-1].Name != "http_request" || !strings.Contains(string(m[len(m)-1].Schema), `"session_id"`) {
		t.Errorf("MCP with http_request: last tool %s %s", m[len(m)-1].Name, m[len(m)-1].Schema)
	}
}

func TestHTTPRequestTool(t *testing.T) {
	tool := httpRequestTool()
	tests := []struct {
		name string
		args string
		ans  func(api.HTTPRequest) (*api.HTTPResponse, error)
		want string
		req  *api.HTTPRequest
	}{
		{
			name: "answer",
			args: `{"method":"POST","url":"https://api.example.com/x","headers":{"Authorization":"Bearer {{secret:T}}"},"body":"b","timeout":60}`,
			ans: func(api.HTTPRequest) (*api.HTTPResponse, error) {
				return &api.HTTPResponse{StatusCode: 201, Headers: map[string]string{"X-B": "2", "A": "[REDACTED_SECRET:T]"}, Body: "ok", Truncated: true, SecretsUsed: []string{"T"}}, nil
			},
			want: "HTTP 201\nA: [REDACTED_SECRET:T]\nX-B: 2\n\nok\n... (body truncated at 1 MiB)\n(secrets used: T)",
			req:  &api.HTTPRequest{Method: "POST", URL: "https://api.example.com/x", Headers: map[string]string{"Authorization": "Bearer {{secret:T}}"}, Body: "b", Timeout: 60},
		},
		{
			name: "refused",
			args: `{"method":"GET","url":"https://b.example.com/"}`,
			ans: func(api.HTTPRequest) (*api.HTTPResponse, error) {
				return nil, &api.Error{Code: api.CodeDestinationNotAllowed, Message: "b.example.com is not an allowed host", Hint: "add it"}
			},
			want: "Error [destination_not_allowed]: b.example.com is not an allowed host\nHint: add it",
		},
		{
			// Gemini's export gives headers as a string of JSON (geminiProperty).
			name: "headers as JSON text",
			args: `{"method":"GET","url":"https://api.example.com/x","headers":"{\"Authorization\":\"Bearer {{secret:T}}\"}"}`,
			ans: func(api.HTTPRequest) (*api.HTTPResponse, error) {
				return &api.HTTPResponse{StatusCode: 200, Body: "ok"}, nil
			},
			want: "HTTP 200\n\nok",
			req:  &api.HTTPRequest{Method: "GET", URL: "https://api.example.com/x", Headers: map[string]string{"Authorization": "Bearer {{secret:T}}"}, Timeout: 15},
		},
		{name: "headers text not an object", args: `{"method":"GET","url":"https://a.example.com/","headers":"Authorization: x"}`, want: `Error: parameter "headers" of http_request must be an object`},
		{name: "no url", args: `{"method":"GET"}`, want: "Error: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &httpFake{ans: tt.ans}
			got := tool.Call(t.Context(), f, json.RawMessage(tt.args))
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
			if tt.req != nil {
				if diff := cmp.Diff([]api.HTTPRequest{*tt.req}, f.got); diff != "" {
					t.Errorf("request (-want +got):\n%s", diff)
				}
			}
		})
	}
	if got := tool.Call(t.Context(), &fake{}, json.RawMessage(`{"method":"GET","url":"https://x/"}`)); !strings.Contains(got, "does not support") {
		t.Errorf("without the capability: %q", got)
	}
}

// optFake also runs the Node.js interpreter and PTY commands.
type optFake struct {
	fake
	node func(api.InterpreterExecRequest) (*api.InterpreterExecResult, error)
	pty  func(api.PTYExecRequest) (*api.PTYExecResult, error)
}

func (f *optFake) NodeInterpreterExec(_ context.Context, r api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
	return f.node(r)
}

func (f *optFake) PTYExec(_ context.Context, r api.PTYExecRequest) (*api.PTYExecResult, error) {
	return f.pty(r)
}

func TestNodeAndPTYTools(t *testing.T) {
	str := func(s string) *string { return &s }
	code := func(n int) *int { return &n }
	var gotPTY api.PTYExecRequest
	f := &optFake{
		node: func(r api.InterpreterExecRequest) (*api.InterpreterExecResult, error) {
			if r.Code == "boom" {
				return &api.InterpreterExecResult{Stdout: "before\n", Error: str("Error: boom\n    at input.js:1")}, nil
			}
			return &api.InterpreterExecResult{Stdout: "hi\n", Result: str("42")}, nil
		},
		pty: func(r api.PTYExecRequest) (*api.PTYExecResult, error) {
			gotPTY = r
			switch r.Command {
			case "slow":
				return &api.PTYExecResult{Output: "partial\r\n", TimedOut: true}, nil
			case "fails":
				return &api.PTYExecResult{Output: "nope\r\n", ExitCode: code(2)}, nil
			}
			return &api.PTYExecResult{Output: "Name? ada\r\nhello ada\r\n", ExitCode: code(0)}, nil
		},
	}
	tests := []struct {
		tool Tool
		args string
		want string
	}{
		{nodeInterpreterTool(), `{"code":"x"}`, "hi\n42"},
		{nodeInterpreterTool(), `{"code":"boom"}`, "before\nError:\nError: boom\n    at input.js:1"},
		{nodeInterpreterTool(), `{"code":" "}`, "Error: code must not be empty"},
		{ptyExecTool(), `{"command":"ask","input_text":"ada\n"}`, "Name? ada\nhello ada"},
		{ptyExecTool(), `{"command":"fails"}`, "Error (exit code 2):\nnope"},
		{ptyExecTool(), `{"command":"slow","timeout_seconds":120}`, "Error: timed out after 120s\npartial"},
	}
	for _, tt := range tests {
		if got := tt.tool.Call(t.Context(), f, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("%s %s = %q, want %q", tt.tool.Name, tt.args, got, tt.want)
		}
	}
	if gotPTY.TimeoutSeconds != api.MaxPTYTimeout {
		t.Errorf("timeout sent: %v", gotPTY.TimeoutSeconds)
	}
	for tool, args := range map[string]string{"node_interpreter": `{"code":"x"}`, "pty_exec": `{"command":"x"}`} {
		tl, _ := Lookup(Optional(), tool)
		if got := tl.Call(t.Context(), &fake{}, json.RawMessage(args)); !strings.Contains(got, "does not support") {
			t.Errorf("%s without the capability: %q", tool, got)
		}
	}
}
