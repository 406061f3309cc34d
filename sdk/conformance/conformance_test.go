package conformance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/sdk/conformance"
	"github.com/boxkite/boxkite/tools"
)

// sdkToolNames are the agent tools the SDKs offer; their definitions are
// generated from the tools package (TestToolDefinitionsFresh).
var sdkToolNames = []string{"bash_tool", "file_create", "view", "str_replace"}

// goToolsMatcher is "$go_tools": the result must be tools.Export's output
// for the SDK tools in that format, so an SDK's schemas are the Go ones.
func goToolsMatcher(arg, got any) error {
	want, err := exportTools(fmt.Sprint(arg))
	if err != nil {
		return err
	}
	return conformance.Match(want, got, nil, nil)
}

func exportTools(format string) (any, error) {
	var ts []tools.Tool
	for _, name := range sdkToolNames {
		tl, ok := tools.Lookup(tools.Default(), name)
		if !ok {
			return nil, fmt.Errorf("no Go tool %s", name)
		}
		ts = append(ts, tl)
	}
	b, err := tools.Export(ts, format)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

// TestConformance runs cases.json against a real control plane with the
// Go client and each SDK's runner. A runner whose toolchain is missing is
// skipped, except under CI, where it fails.
func TestConformance(t *testing.T) {
	suite, err := conformance.Load("cases.json")
	if err != nil {
		t.Fatal(err)
	}
	casesPath, err := filepath.Abs("cases.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range []string{"go", "python", "typescript", "rust"} {
		t.Run(sdk, func(t *testing.T) {
			srv := startServers(t)
			var lines [][]byte
			if sdk == "go" {
				lines = runGo(t, suite, srv)
			} else {
				lines = runSubprocess(t, runnerCommand(t, sdk, casesPath), srv.env())
			}
			check(t, sdk, suite, lines, srv)
			srv.rec.check(t, sdk, true)
		})
	}
}

// check compares a runner's outcomes with the suite.
func check(t *testing.T, sdk string, suite *conformance.Suite, lines [][]byte, srv *servers) {
	t.Helper()
	got := map[string]conformance.Outcome{}
	for _, l := range lines {
		var o conformance.Outcome
		if err := json.Unmarshal(l, &o); err != nil {
			t.Fatalf("runner printed %q: %v", l, err)
		}
		got[o.Name] = o
	}
	saved := map[string]any{}
	extra := map[string]conformance.Matcher{"$go_tools": goToolsMatcher}
	for _, c := range suite.Cases {
		if why, ok := c.Skip[sdk]; ok {
			t.Logf("%s: skipped for %s: %s", c.Name, sdk, why)
			continue
		}
		o, ok := got[c.Name]
		if !ok {
			t.Errorf("%s: the %s runner reported nothing", c.Name, sdk)
			continue
		}
		saved[c.Name] = o.Result
		if c.ExpectError != nil {
			if o.Error == nil {
				t.Errorf("%s (%s): got result %s, want an error", c.Name, c.Call, show(o.Result))
				continue
			}
			if err := conformance.Match(c.ExpectError, o.Error, saved, extra); err != nil {
				t.Errorf("%s (%s): error: %v", c.Name, c.Call, err)
			}
			checkDisplay(t, sdk, c.Name, o.Error)
		} else {
			if o.Error != nil {
				t.Errorf("%s (%s): got error %s, want a result", c.Name, c.Call, show(o.Error))
				continue
			}
			if err := conformance.Match(c.Expect, o.Result, saved, extra); err != nil {
				t.Errorf("%s (%s): %v", c.Name, c.Call, err)
			}
		}
		if o.ElapsedMS < c.MinElapsedMS {
			t.Errorf("%s: took %d ms, want at least %d (a retry after Retry-After)", c.Name, o.ElapsedMS, c.MinElapsedMS)
		}
	}
	// A 503 the server will answer again (secrets_unavailable: no secrets
	// key) is not retried: each secrets case is one request.
	for name, op := range map[string]string{
		"secret_create": "POST /v1/secrets", "secret_list": "GET /v1/secrets",
		"secret_update": "PUT /v1/secrets/{id}", "secret_delete": "DELETE /v1/secrets/{id}",
		"http_request": "POST /v1/sandboxes/{id}/http-request",
	} {
		if _, ok := got[name]; ok {
			if n := srv.rec.calls(op); n != 1 {
				t.Errorf("%s: %s was sent %d times, want once: secrets_unavailable is not worth retrying", name, op, n)
			}
		}
	}
	if _, ok := got["log_follow_reconnect"]; ok {
		srv.mu.Lock()
		cut, resumed := srv.cutAfter, slices.Clone(srv.resumed)
		srv.mu.Unlock()
		if cut == "" || len(resumed) == 0 || resumed[0] != cut {
			t.Errorf("log_follow_reconnect: the stream was cut after event %q; the SDK reconnected with Last-Event-ID %q, want it once with that id", cut, resumed)
		}
	}
	// list_paged walked at least 3 sandboxes 2 at a time, so it asked for
	// at least one page by cursor, besides page_next's.
	if _, ok := got["list_paged"]; ok {
		if n := srv.rec.cursorCalls("GET /v1/sandboxes"); n < 2 {
			t.Errorf("list_paged: GET /v1/sandboxes was called with a cursor %d times, want at least 2: does sandboxes.all read page by page?", n)
		}
	}
	// image_all_paged, webhook_all_paged and webhook_deliveries_all_paged
	// walked their lists a page at a time: besides *_page_next's call,
	// at least one by cursor.
	for name, route := range map[string]string{
		"image_all_paged":              "GET /v1/images",
		"webhook_all_paged":            "GET /v1/webhooks",
		"webhook_deliveries_all_paged": "GET /v1/webhooks/{id}/deliveries",
	} {
		if _, ok := got[name]; ok {
			if n := srv.rec.cursorCalls(route); n < 2 {
				t.Errorf("%s: %s was called with a cursor %d times, want at least 2: does its all() read page by page?", name, route, n)
			}
		}
	}
	// The flaky proxy saw each retried call twice (the refusal, then the
	// retry), and the call whose work was done once.
	for name, want := range map[string]struct {
		route string
		calls int
	}{
		"retry_after":        {"GET /v1/sandboxes", 2},
		"retry_503":          {"GET /v1/volumes", 2},
		"no_retry_performed": {"GET /v1/usage", 1},
	} {
		if _, ok := got[name]; ok {
			if n := srv.flakyCount(want.route); n != want.calls {
				t.Errorf("%s: the flaky proxy got %d requests for %s, want %d", name, n, want.route, want.calls)
			}
		}
	}
}

// checkDisplay checks that an SDK error's text, as a program would print
// it, shows the stable code and the hint (acceptance 4).
func checkDisplay(t *testing.T, sdk, name string, e map[string]any) {
	t.Helper()
	display, _ := e["display"].(string)
	code, _ := e["code"].(string)
	hint, _ := e["hint"].(string)
	if !strings.Contains(display, code) || (hint != "" && !strings.Contains(display, hint)) {
		t.Errorf("%s: the %s error prints as %q; want it to show code %q and hint %q", name, sdk, display, code, hint)
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestToolDefinitionsFresh checks that the tool definitions the Python and
// TypeScript SDKs ship are those of the Go tools package; with -update it
// rewrites them.
func TestToolDefinitionsFresh(t *testing.T) {
	v, err := exportTools("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	var defs []map[string]any
	for _, tl := range v.([]any) {
		m := tl.(map[string]any)
		defs = append(defs, map[string]any{"name": m["name"], "description": m["description"], "parameters": m["input_schema"]})
	}
	b, err := json.MarshalIndent(defs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := string(b) + "\n"
	for _, f := range []struct{ path, content string }{
		{"../python/boxkite/tooldefs.json", want},
		{"../typescript/src/tooldefs.ts", "// Generated by sdk/conformance's TestToolDefinitionsFresh from the Go tools package: do not edit.\n" +
			"// go test ./sdk/conformance -run TestToolDefinitionsFresh -update rewrites it.\n\n" +
			"export const TOOL_DEFINITIONS = " + strings.TrimSuffix(want, "\n") + " as const;\n"},
	} {
		if *update {
			if err := os.WriteFile(f.path, []byte(f.content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(have) != f.content {
			t.Errorf("%s is stale: run go test ./sdk/conformance -run TestToolDefinitionsFresh -update", f.path)
		}
	}
}
