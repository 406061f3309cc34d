//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/tools"
)

// mainEnv makes the test binary run main instead of the tests, so the
// stdio tests start a real boxkite-mcp process without a separate build.
const mainEnv = "BOXKITE_MCP_TEST_MAIN"

// TSSDKEnv names a directory with node_modules/@modelcontextprotocol/sdk
// installed (.ci/run installs it). Without it the TypeScript client test
// is skipped, except in CI, where that is a failure.
const TSSDKEnv = "BOXKITE_TEST_MCP_TS_SDK"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// step is one tool call of the acceptance flow and what its text must be.
type step struct {
	tool  string
	args  func(id string) map[string]any
	check func(text, id string) error
}

var createdRE = regexp.MustCompile(`^Created sandbox (\S+) \(status: active, expires_at: \S+\)$`)

func contains(want string) func(text, id string) error {
	return func(text, _ string) error {
		if !strings.Contains(text, want) {
			return fmt.Errorf("want it to contain %q", want)
		}
		return nil
	}
}

// flow is create_sandbox → exec → file_create → view → grep →
// destroy_sandbox; testdata/ts_client.mjs makes the same calls.
var flow = []step{
	{"create_sandbox", func(string) map[string]any { return map[string]any{"label": "ts-sdk"} }, func(text, _ string) error {
		if !createdRE.MatchString(text) {
			return fmt.Errorf("want %s", createdRE)
		}
		return nil
	}},
	{"exec", func(id string) map[string]any {
		return map[string]any{"session_id": id, "command": "echo hello from $((6*7))"}
	}, func(text, _ string) error {
		if text != "hello from 42" {
			return fmt.Errorf("want %q", "hello from 42")
		}
		return nil
	}},
	{"file_create", func(id string) map[string]any {
		return map[string]any{"session_id": id, "path": "notes/todo.txt", "content": "alpha\nneedle here\nomega\n"}
	}, contains("Created file: /workspace/notes/todo.txt (24 bytes)")},
	{"view", func(id string) map[string]any {
		return map[string]any{"session_id": id, "path": "notes/todo.txt", "view_range": []int{2, 3}}
	}, contains("File: notes/todo.txt (lines 2-3 of 3)\n     2\tneedle here\n     3\tomega")},
	{"grep", func(id string) map[string]any {
		return map[string]any{"session_id": id, "pattern": "need+le", "path": "notes"}
	}, contains("todo.txt:2: needle here")},
	{"destroy_sandbox", func(id string) map[string]any { return map[string]any{"session_id": id} }, func(text, id string) error {
		if text != "Destroyed sandbox "+id {
			return fmt.Errorf("want %q", "Destroyed sandbox "+id)
		}
		return nil
	}},
}

// toolNames is what tools/list must answer, sorted.
func toolNames() []string {
	var names []string
	for _, t := range tools.MCP(nil, nil) {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// TestRealServer (issue 8, acceptances 1 and 2): MCP clients against a
// real control plane with the local driver, over stdio (boxkite-mcp) and
// Streamable HTTP (/mcp/): the go-sdk client, and the official TypeScript
// SDK client when it is installed.
func TestRealServer(t *testing.T) {
	s := servertest.New(t)
	home := t.TempDir() // no CLI config: the environment alone must do
	env := append(os.Environ(), mainEnv+"=1", "BOXKITE_HOME="+home,
		"BOXKITE_BASE_URL="+s.BaseURL, "BOXKITE_API_KEY="+s.APIKey)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("go-sdk/stdio", func(t *testing.T) {
		cmd := exec.Command(self)
		cmd.Env = env
		cmd.Stderr = testWriter{t}
		runGoFlow(t, s, &mcp.CommandTransport{Command: cmd})
	})
	t.Run("go-sdk/http", func(t *testing.T) {
		hc := &http.Client{Transport: bearer{s.APIKey, http.DefaultTransport}}
		runGoFlow(t, s, &mcp.StreamableClientTransport{Endpoint: s.BaseURL + "/mcp/", HTTPClient: hc, MaxRetries: -1})
	})
	t.Run("http/no-key", func(t *testing.T) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		req, _ := http.NewRequest("POST", s.BaseURL+"/mcp/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var env api.ErrorEnvelope
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &env) != nil || env.Error == nil || env.Error.Code != api.CodeUnauthorized {
			t.Errorf("POST /mcp/ without a key: %d %s; want 401 with an %s envelope", resp.StatusCode, b, api.CodeUnauthorized)
		}
	})

	sdk := os.Getenv(TSSDKEnv)
	if sdk == "" && os.Getenv("CI") != "" {
		t.Fatalf("%s is not set but CI is: .ci/run must install @modelcontextprotocol/sdk for the TypeScript client test", TSSDKEnv)
	}
	t.Run("ts-sdk/stdio", func(t *testing.T) {
		out := runTS(t, sdk, env, "stdio", self)
		checkTS(t, out)
	})
	t.Run("ts-sdk/http", func(t *testing.T) {
		out := runTS(t, sdk, env, "http", s.BaseURL+"/mcp/")
		checkTS(t, out)
	})
}

// runGoFlow connects the go-sdk client over transport and runs the flow,
// then the calls that must come back as tool errors.
func runGoFlow(t *testing.T, s *servertest.Server, transport mcp.Transport) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "boxkite-test", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if si := cs.InitializeResult().ServerInfo; si.Name != "boxkite" {
		t.Errorf("server name = %q, want boxkite", si.Name)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, toolNames()) || len(names) != 31 {
		t.Fatalf("tools/list = %v, want the 31 of tools.MCP", names)
	}

	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: protocol error: %v", tool, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	var id string
	for _, st := range flow {
		text, isErr := call(st.tool, st.args(id))
		if m := createdRE.FindStringSubmatch(text); m != nil {
			id = m[1]
		}
		if err := st.check(text, id); err != nil || isErr {
			t.Fatalf("%s = %q (isError %v): %v", st.tool, text, isErr, err)
		}
	}
	text, _ := call("get_sandbox", map[string]any{"session_id": id})
	if !strings.Contains(text, "status: destroyed") {
		t.Errorf("get_sandbox after destroy_sandbox = %q", text)
	}

	// Errors are tool results the agent can read, not protocol errors.
	live, _ := call("create_sandbox", map[string]any{"lifetime_minutes": 5})
	m := createdRE.FindStringSubmatch(live)
	if m == nil {
		t.Fatalf("create_sandbox = %q", live)
	}
	defer call("destroy_sandbox", map[string]any{"session_id": m[1]})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"exec", map[string]any{"session_id": m[1], "command": "echo oops >&2; exit 3"}, "Error (exit code 3):\noops"},
		{"view", map[string]any{"session_id": m[1], "path": "missing.txt"}, "Error [not_found]: File not found: missing.txt\nHint: list what is there with `ls` (relative paths are in /workspace)"},
		// The API's hints name CLI commands (the sidecar's in single
		// quotes); an agent reads the tools instead.
		{"exec", map[string]any{"session_id": id, "command": "true"}, "Error [conflict]: sandbox " + id + " is destroyed\nHint: create a new sandbox with `create_sandbox`"},
		{"get_sandbox", map[string]any{"session_id": "00000000-0000-4000-8000-000000000000"}, "Error [not_found]: sandbox 00000000-0000-4000-8000-000000000000 not found\nHint: list your sandboxes with `list_sandboxes`"},
		{"file_create", map[string]any{"session_id": m[1], "path": "x"}, `Error: file_create needs the parameter "content"`},
	} {
		text, isErr := call(tc.tool, tc.args)
		if !strings.HasPrefix(text, tc.want) || !isErr {
			t.Errorf("%s(%v) = %q (isError %v), want a tool error starting %q", tc.tool, tc.args, text, isErr, tc.want)
		}
		if strings.Contains(text, "`boxkite ") || strings.Contains(text, "'boxkite ") {
			t.Errorf("%s(%v) = %q names a CLI command the agent cannot run", tc.tool, tc.args, text)
		}
	}
}

// tsOutput is what testdata/ts_client.mjs prints.
type tsOutput struct {
	Server struct{ Name, Version string }
	Tools  []string
	Calls  []struct {
		Name    string
		Args    map[string]any
		Text    string
		IsError bool
	}
}

// runTS runs the TypeScript SDK client script with the SDK in sdkDir.
func runTS(t *testing.T, sdkDir string, env []string, mode, target string) tsOutput {
	t.Helper()
	if sdkDir == "" {
		t.Skipf("%s is not set (.ci/run installs the TypeScript MCP SDK and sets it)", TSSDKEnv)
	}
	mods := filepath.Join(sdkDir, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("%s=%s has no @modelcontextprotocol/sdk: %v", TSSDKEnv, sdkDir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed but %s is set: %v", TSSDKEnv, err)
	}
	// ES modules resolve packages next to the script, so the script runs
	// from a directory whose node_modules is the installed one.
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "ts_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ts_client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "ts_client.mjs"), mode, target)
	cmd.Env = env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, testWriter{t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("node ts_client.mjs %s: %v\nstdout: %s", mode, err, stdout.String())
	}
	var out tsOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("ts_client.mjs output: %v\n%s", err, stdout.String())
	}
	return out
}

// checkTS checks the TypeScript client's tool list and calls against flow.
func checkTS(t *testing.T, out tsOutput) {
	t.Helper()
	if out.Server.Name != "boxkite" {
		t.Errorf("server name = %q, want boxkite", out.Server.Name)
	}
	names := slices.Clone(out.Tools)
	slices.Sort(names)
	if !slices.Equal(names, toolNames()) || len(names) != 31 {
		t.Errorf("tools/list = %v, want the 31 of tools.MCP", out.Tools)
	}
	if len(out.Calls) != len(flow) {
		t.Fatalf("the TypeScript client made %d calls, want %d: %+v", len(out.Calls), len(flow), out.Calls)
	}
	var id string
	for i, st := range flow {
		c := out.Calls[i]
		if m := createdRE.FindStringSubmatch(c.Text); m != nil {
			id = m[1]
		}
		if c.Name != st.tool {
			t.Errorf("call %d is %s, want %s", i, c.Name, st.tool)
		}
		if err := st.check(c.Text, id); err != nil || c.IsError {
			t.Errorf("%s = %q (isError %v): %v", c.Name, c.Text, c.IsError, err)
		}
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

// testWriter sends a child's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
