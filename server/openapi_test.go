package server_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server"
)

// TestOpenAPICoversRoutes: /openapi.json documents every route the server
// registers, and nothing it does not, with and without an image store
// (whose routes only such a server serves).
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Run("without images", func(t *testing.T) { testOpenAPICoversRoutes(t, server.Config{}, false) })
	// The routes are only listed: no method of the store is called.
	t.Run("with images", func(t *testing.T) { testOpenAPICoversRoutes(t, server.Config{Images: unusedImages{}}, true) })
}

type unusedImages struct{ server.ImageStore }

func testOpenAPICoversRoutes(t *testing.T, cfg server.Config, images bool) {
	e := newEnv(t, cfg)
	resp, body := e.do("GET", "/openapi.json", "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	mustUnmarshal(t, body, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}

	wildcard := regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)
	registered := map[string]bool{}
	patternOf := map[string]string{} // "get /path" → the registered pattern
	for _, pattern := range e.Server.Routes() {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			continue // the catch-all "/": no route to document
		}
		key := strings.ToLower(method) + " " + wildcard.ReplaceAllString(path, "{$1}")
		registered[key] = true
		patternOf[key] = pattern
		if _, ok := doc.Paths[wildcard.ReplaceAllString(path, "{$1}")][strings.ToLower(method)]; !ok {
			t.Errorf("route %s is missing from /openapi.json", pattern)
		}
	}
	if len(registered) < 40 {
		t.Errorf("only %d routes registered; Routes() is not listing them all", len(registered))
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if !registered[method+" "+path] {
				t.Errorf("/openapi.json documents %s %s, which the server does not serve", strings.ToUpper(method), path)
			}
			var o struct {
				Summary     string                     `json:"summary"`
				Responses   map[string]json.RawMessage `json:"responses"`
				RequestBody json.RawMessage            `json:"requestBody"`
				Security    *[]any                     `json:"security"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.Summary == "" || len(o.Responses) < 2 {
				t.Errorf("%s %s: want a summary, a success and a default response: %s", method, path, op)
			}
			checkErrorStatuses(t, method, path, o.Responses, o.RequestBody != nil, o.Security == nil || len(*o.Security) > 0, patternOf[method+" "+path])
		}
	}

	// Every $ref points at a schema that exists.
	refs := regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`).FindAllStringSubmatch(string(body), -1)
	if len(refs) == 0 {
		t.Fatal("no schema references")
	}
	for _, m := range refs {
		if _, ok := doc.Components.Schemas[m[1]]; !ok {
			t.Errorf("$ref to missing schema %s", m[1])
		}
	}
	for _, name := range []string{"ExecRequest", "ExecResult", "LogEntry", "Sandbox", "AllowedCommands", "CommandRule", "ErrorEnvelope"} {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("schema %s missing", name)
		}
	}
	var exec struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	mustUnmarshal(t, doc.Components.Schemas["ExecRequest"], &exec)
	for _, field := range []string{"command", "timeout"} {
		if _, ok := exec.Properties[field]; !ok {
			t.Errorf("ExecRequest schema lacks %q: %s", field, doc.Components.Schemas["ExecRequest"])
		}
	}
	if !slices.Contains(e.Server.Routes(), "GET /openapi.json") {
		t.Error("GET /openapi.json is not registered")
	}
	if _, ok := doc.Paths["/v1/images/{id}/log"]["get"]; ok != images {
		t.Errorf("GET /v1/images/{id}/log documented: %v, want %v", ok, images)
	}
}

// checkErrorStatuses: an operation documents the refusals it can get
// (docs/errors.md): 400 and 431 always, the body refusals (408, 413, 415,
// 422) with a JSON body, 401 with a credential, and 429 with Retry-After
// on a rate-limited route.
func checkErrorStatuses(t *testing.T, method, path string, responses map[string]json.RawMessage, hasBody, authed bool, pattern string) {
	t.Helper()
	want := []string{"400", "431"}
	if hasBody {
		want = append(want, "408", "413", "415", "422")
	}
	if authed {
		want = append(want, "401")
	}
	if server.BucketOf(pattern) != "" {
		want = append(want, "429")
		if !strings.Contains(string(responses["429"]), `"Retry-After"`) {
			t.Errorf("%s %s: 429 without a Retry-After header: %s", method, path, responses["429"])
		}
	}
	for _, status := range want {
		r, ok := responses[status]
		if !ok {
			t.Errorf("%s %s: no %s response", method, path, status)
			continue
		}
		if !strings.Contains(string(r), "#/components/schemas/ErrorEnvelope") {
			t.Errorf("%s %s: the %s response is not the error envelope: %s", method, path, status, r)
		}
	}
}
