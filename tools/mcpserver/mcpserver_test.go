package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
	"github.com/boxkite/boxkite/tools/mcpserver"
)

// provider answers list_sandbox_volumes and fails everything else it is
// asked (the embedded nil interface panics, which tools.Call reports).
type provider struct {
	tools.Provider
}

func (provider) ListVolumes(context.Context) ([]api.Volume, error) {
	return []api.Volume{{ID: "vol-1", Label: "data", SizeGB: 1, Status: "ready"}}, nil
}

func (provider) DeleteSandbox(_ context.Context, id string) error {
	return &api.Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: "sandbox " + id + " not found"}
}

// sandbox answers exec only; the nil embedded Sandbox panics otherwise.
type sandbox struct{ tools.Sandbox }

func (sandbox) Exec(_ context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	if req.Command == "down" {
		return nil, errors.New("connection refused")
	}
	return &api.ExecResult{Stdout: "ran " + req.Command + "\n"}, nil
}

func newServer() *mcp.Server {
	return mcpserver.New("test", mcpserver.Static(provider{}, func(string) tools.Sandbox { return sandbox{} }))
}

// connect runs s on in-memory transports and returns a connected client.
func connect(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestInMemory(t *testing.T) {
	cs := connect(t, newServer())
	ctx := context.Background()
	if got := cs.InitializeResult().ServerInfo; got.Name != "boxkite" || got.Version != "test" {
		t.Errorf("server info = %+v, want boxkite test", got)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	want := tools.MCP(nil, nil)
	if len(list.Tools) != 31 || len(want) != 31 {
		t.Fatalf("listed %d tools, tools.MCP has %d; want 31", len(list.Tools), len(want))
	}
	for _, tl := range list.Tools { // the SDK lists them sorted by name
		w, ok := tools.Lookup(want, tl.Name)
		if !ok || tl.Description != w.Description {
			t.Errorf("listed tool %s (%q) is not in tools.MCP as such", tl.Name, tl.Description)
			continue
		}
		got, _ := json.Marshal(tl.InputSchema)
		var a, b any
		_ = json.Unmarshal(got, &a)
		_ = json.Unmarshal(w.Schema, &b)
		if diff := cmp.Diff(b, a); diff != "" {
			t.Errorf("%s schema over MCP (-want +got):\n%s", tl.Name, diff)
		}
	}

	tests := []struct {
		name    string
		tool    string
		args    any
		want    string
		isError bool
	}{
		{"result", "exec", map[string]any{"session_id": "sb-1", "command": "ls"}, "ran ls", false},
		{"account tool", "list_sandbox_volumes", nil, "- vol-1 (status: ready, label: data, size_gb: 1)", false},
		{"api refusal", "destroy_sandbox", map[string]any{"session_id": "nope"}, "Error [not_found]: sandbox nope not found", true},
		{"transport failure", "exec", map[string]any{"session_id": "sb-1", "command": "down"}, "Error: could not reach the sandbox (connection refused)", true},
		{"bad arguments", "exec", map[string]any{"session_id": "sb-1"}, `Error: exec needs the parameter "command"`, true},
		{"timeout below range", "exec", map[string]any{"session_id": "sb-1", "command": "ls", "timeout": -5}, "Error: timeout must be between 1 and 600 seconds, got -5", true},
		{"timeout above range", "exec", map[string]any{"session_id": "sb-1", "command": "ls", "timeout": 1e12}, "Error: timeout must be between 1 and 600 seconds, got 1000000000000", true},
		{"timeout zero", "exec", map[string]any{"session_id": "sb-1", "command": "ls", "timeout": 0}, "Error: timeout must be between 1 and 600 seconds, got 0", true},
		{"timeout at the bounds", "exec", map[string]any{"session_id": "sb-1", "command": "ls", "timeout": 600}, "ran ls", false},
		{"wrong type", "view", map[string]any{"session_id": "sb-1", "path": 3}, `Error: parameter "path" of view must be a string`, true},
		{"handler panic", "get_sandbox", map[string]any{"session_id": "sb-1"}, "Error: internal error in get_sandbox", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("%s: protocol error %v; want a tool result", tc.tool, err)
			}
			text := textOf(t, res)
			if !strings.HasPrefix(text, tc.want) || res.IsError != tc.isError {
				t.Errorf("%s = %q (isError %v), want %q (isError %v)", tc.tool, text, res.IsError, tc.want, tc.isError)
			}
		})
	}
}

func TestUnknownToolIsProtocolError(t *testing.T) {
	cs := connect(t, newServer())
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rm_rf"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
}

// TestBackendError: a backend that cannot serve the call (no credentials)
// answers with a tool error, not a protocol error.
func TestBackendError(t *testing.T) {
	s := mcpserver.New("test", func(context.Context, *mcp.CallToolRequest) (tools.Provider, tools.Binder, error) {
		return nil, nil, errors.New("no credentials")
	})
	cs := connect(t, s)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sandboxes", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "Error: no credentials" || !res.IsError {
		t.Errorf("got %q isError=%v", got, res.IsError)
	}
}

// TestHTTPHandler: the Streamable HTTP handler serves the same tools to
// the SDK's own HTTP client, and passes request headers to the backend.
func TestHTTPHandler(t *testing.T) {
	var sawAuth string
	s := mcpserver.New("test", func(_ context.Context, req *mcp.CallToolRequest) (tools.Provider, tools.Binder, error) {
		sawAuth = req.Extra.Header.Get("Authorization")
		return provider{}, func(string) tools.Sandbox { return sandbox{} }, nil
	})
	srv := httptest.NewServer(mcpserver.HTTPHandler(s))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: bearer{"k1", http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"session_id": "s", "command": "pwd"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "ran pwd" || sawAuth != "Bearer k1" {
		t.Errorf("exec over HTTP = %q, backend saw Authorization %q", got, sawAuth)
	}
}

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents, want 1 text", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// A POST whose body is not JSON gets JSON-RPC's parse error (-32700, id
// null) as JSON, not the SDK's plain-text "malformed payload"; a wrong
// Content-Type is still the SDK's 415.
func TestHTTPHandlerParseError(t *testing.T) {
	srv := httptest.NewServer(mcpserver.HTTPHandler(newServer()))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ name, body, ctype string }{
		{"not JSON", "hello {", "application/json"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, "application/json; charset=utf-8"},
		{"empty", "", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.ctype)
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("answer is not JSON (%s): %v", resp.Header.Get("Content-Type"), err)
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
				got.JSONRPC != "2.0" || string(got.ID) != "null" || got.Error.Code != -32700 ||
				!strings.HasPrefix(got.Error.Message, "Parse error") {
				t.Errorf("answer = %d %s %+v", resp.StatusCode, resp.Header.Get("Content-Type"), got)
			}
		})
	}
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST = %d, want 415", resp.StatusCode)
	}
}

// pages is a provider whose account has sandboxes sb-1 … sb-5 (newest
// first); a cursor is the index to go on from.
type pages struct {
	provider
	calls *[]string
}

func (p pages) ListSandboxesPage(_ context.Context, activeOnly bool, limit int, cursor string) ([]api.Sandbox, string, error) {
	*p.calls = append(*p.calls, fmt.Sprintf("active_only=%t limit=%d cursor=%q", activeOnly, limit, cursor))
	from, _ := strconv.Atoi(cursor)
	var sbs []api.Sandbox
	for i := from; i < 5 && len(sbs) < limit; i++ {
		sbs = append(sbs, api.Sandbox{ID: fmt.Sprintf("sb-%d", i+1), Status: api.StatusDestroyed, Size: "small"})
	}
	next := ""
	if from+len(sbs) < 5 {
		next = strconv.Itoa(from + len(sbs))
	}
	return sbs, next, nil
}

// TestListSandboxesPages: list_sandboxes asks for 50 by default, takes a
// limit up to 200 and a cursor, ends a page that has more after it with
// the next cursor, and refuses a limit out of range without a call.
func TestListSandboxesPages(t *testing.T) {
	var calls []string
	cs := connect(t, mcpserver.New("test", mcpserver.Static(pages{calls: &calls}, func(string) tools.Sandbox { return sandbox{} })))
	call := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sandboxes", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return textOf(t, res), res.IsError
	}
	if text, isErr := call(map[string]any{}); isErr || strings.Count(text, "\n- ")+1 != 5 || strings.Contains(text, "cursor") {
		t.Errorf("default page = %q (isError %v), want the 5 sandboxes and no cursor", text, isErr)
	}
	text, _ := call(map[string]any{"limit": 2})
	if !strings.HasPrefix(text, "- sb-1 ") || !strings.Contains(text, "\n- sb-2 ") || !strings.HasSuffix(text, "\n(more: call list_sandboxes with cursor \"2\" for the next page)") {
		t.Errorf("first page of 2 = %q, want sb-1, sb-2 and the cursor 2", text)
	}
	text, _ = call(map[string]any{"limit": 2, "cursor": "4", "active_only": false})
	if !strings.HasPrefix(text, "- sb-5 ") || strings.Contains(text, "\n") {
		t.Errorf("last page = %q, want sb-5 alone, no cursor", text)
	}
	for _, limit := range []any{0, 201, -1} {
		text, isErr := call(map[string]any{"limit": limit})
		want := fmt.Sprintf("Error: limit must be between 1 and 200, got %v\nHint: omit limit for the default of 50.", limit)
		if text != want || !isErr {
			t.Errorf("limit %v = %q (isError %v), want %q", limit, text, isErr, want)
		}
	}
	want := []string{`active_only=false limit=50 cursor=""`, `active_only=false limit=2 cursor=""`, `active_only=false limit=2 cursor="4"`}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("pages asked for (-want +got):\n%s", diff)
	}
}

// ListImagesPage: the account's images img-1 … img-5, newest first; a
// cursor is the index to go on from.
func (p pages) ListImagesPage(_ context.Context, limit int, cursor string) ([]api.Image, string, error) {
	*p.calls = append(*p.calls, fmt.Sprintf("limit=%d cursor=%q", limit, cursor))
	from, _ := strconv.Atoi(cursor)
	var imgs []api.Image
	for i := from; i < 5 && len(imgs) < limit; i++ {
		imgs = append(imgs, api.Image{ID: fmt.Sprintf("img-%d", i+1), Status: "ready"})
	}
	next := ""
	if from+len(imgs) < 5 {
		next = strconv.Itoa(from + len(imgs))
	}
	return imgs, next, nil
}

// TestListImagesPages: list_sandbox_images pages as list_sandboxes does:
// 50 by default, a limit up to 200 and a cursor, the next cursor at the
// end of a page with more after it, a limit out of range refused without
// a call.
func TestListImagesPages(t *testing.T) {
	var calls []string
	cs := connect(t, mcpserver.New("test", mcpserver.Static(pages{calls: &calls}, func(string) tools.Sandbox { return sandbox{} })))
	call := func(args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sandbox_images", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return textOf(t, res), res.IsError
	}
	if text, isErr := call(map[string]any{}); isErr || strings.Count(text, "\n- ")+1 != 5 || strings.Contains(text, "cursor") {
		t.Errorf("default page = %q (isError %v), want the 5 images and no cursor", text, isErr)
	}
	text, _ := call(map[string]any{"limit": 2})
	if !strings.HasPrefix(text, "- img-1 ") || !strings.Contains(text, "\n- img-2 ") || !strings.HasSuffix(text, "\n(more: call list_sandbox_images with cursor \"2\" for the next page)") {
		t.Errorf("first page of 2 = %q, want img-1, img-2 and the cursor 2", text)
	}
	text, _ = call(map[string]any{"limit": 2, "cursor": "4"})
	if !strings.HasPrefix(text, "- img-5 ") || strings.Contains(text, "\n") {
		t.Errorf("last page = %q, want img-5 alone, no cursor", text)
	}
	for _, limit := range []any{0, 201} {
		text, isErr := call(map[string]any{"limit": limit})
		want := fmt.Sprintf("Error: limit must be between 1 and 200, got %v\nHint: omit limit for the default of 50.", limit)
		if text != want || !isErr {
			t.Errorf("limit %v = %q (isError %v), want %q", limit, text, isErr, want)
		}
	}
	want := []string{`limit=50 cursor=""`, `limit=2 cursor=""`, `limit=2 cursor="4"`}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("pages asked for (-want +got):\n%s", diff)
	}
}

// blocking is a sandbox whose exec runs until its context ends: it says
// when it started, and which command ended with what.
type blocking struct {
	tools.Sandbox
	started chan struct{}
	ended   chan ended
}

type ended struct {
	command string
	err     error
}

func (b blocking) Exec(ctx context.Context, req api.ExecRequest) (*api.ExecResult, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- ended{req.Command, ctx.Err()}
	return nil, ctx.Err()
}

// post sends one JSON-RPC message to the stateless endpoint as key, with
// ctx, and returns the status and body.
func post(ctx context.Context, t *testing.T, url, key, msg string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(msg))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// A long tool call over the stateless HTTP endpoint ends when its caller
// cancels it (notifications/cancelled, in a POST of its own, as the
// TypeScript SDK sends it) or its POST's client goes away; before, it ran
// to its end either way. A cancellation by another key, or naming an id
// two calls of the key share, cancels nothing: the calls end in the order
// their own ends come, which each step checks.
func TestHTTPCancel(t *testing.T) {
	sb := blocking{started: make(chan struct{}, 4), ended: make(chan ended, 4)}
	s := mcpserver.New("test", mcpserver.Static(provider{}, func(string) tools.Sandbox { return sb }))
	srv := httptest.NewServer(mcpserver.HTTPHandler(s))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	type answer struct {
		status int
		body   string
	}
	// start posts tools/call id running command as key, with ctx, and
	// returns once the command runs.
	start := func(ctx context.Context, key string, id int, command string) <-chan answer {
		done := make(chan answer, 1)
		go func() {
			st, b := post(ctx, t, srv.URL, key, fmt.Sprintf(
				`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"exec","arguments":{"session_id":"s","command":%q}}}`, id, command))
			done <- answer{st, b}
		}()
		select {
		case <-sb.started:
		case <-time.After(time.Minute):
			t.Fatalf("%s never started", command)
		}
		return done
	}
	cancel := func(key, id string) {
		t.Helper()
		msg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"user"}}`
		if st, b := post(ctx, t, srv.URL, key, msg); st != http.StatusAccepted {
			t.Fatalf("cancellation of %s by %s = %d %s", id, key, st, b)
		}
	}
	endsNext := func(command string) {
		t.Helper()
		select {
		case e := <-sb.ended:
			if e.command != command || !errors.Is(e.err, context.Canceled) {
				t.Errorf("%s ended with %v, want %s canceled", e.command, e.err, command)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s did not end", command)
		}
	}

	done := start(ctx, "k1", 7, "seven")
	cancel("k2", "7") // another key's: nothing
	ctxA, cancelA := context.WithCancel(ctx)
	ctxB, cancelB := context.WithCancel(ctx)
	doneA, doneB := start(ctxA, "k1", 8, "eight A"), start(ctxB, "k1", 8, "eight B")
	cancel("k1", "8") // ambiguous: nothing
	cancel("k1", "7.0")
	endsNext("seven")
	if a := <-done; !strings.Contains(a.body, "Error: the call was canceled") {
		t.Errorf("answer of the cancelled call = %d %s", a.status, a.body)
	}
	cancelB() // a client that goes away ends its call
	endsNext("eight B")
	<-doneB
	cancelA()
	endsNext("eight A")
	<-doneA
}
