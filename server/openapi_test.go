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
// registers, and nothing it does not.
func TestOpenAPICoversRoutes(t *testing.T) {
	e := newEnv(t, server.Config{})
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
	for _, pattern := range e.Server.Routes() {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			continue // the catch-all "/": no route to document
		}
		key := strings.ToLower(method) + " " + wildcard.ReplaceAllString(path, "{$1}")
		registered[key] = true
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
				Summary   string                     `json:"summary"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.Summary == "" || len(o.Responses) < 2 {
				t.Errorf("%s %s: want a summary, a success and a default response: %s", method, path, op)
			}
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
}
