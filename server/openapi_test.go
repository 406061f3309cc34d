package server_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/imagesapi"
)

// TestOpenAPICoversRoutes: /openapi.json documents every route the server
// registers, and nothing it does not.
func TestOpenAPICoversRoutes(t *testing.T) {
	e := newEnv(t, server.Config{Images: stubImages{}, MCPOAuth: true, DemoPlayground: true}) // /v1/images does its work only with an image store, /oauth/ is served with --mcp-oauth
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
	for _, name := range []string{"ExecRequest", "ExecResult", "ExecEvent", "LogEntry", "Sandbox", "AllowedCommands", "CommandRule", "ErrorEnvelope", "Image", "CreateImageRequest"} {
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

// stubImages stands in for an image store: the routes are registered, and
// no test here calls them.
type stubImages struct{ imagesapi.Store }

// openAPIDoc fetches /openapi.json from a server with every route.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	e := newEnv(t, server.Config{Images: stubImages{}})
	resp, body := e.do("GET", "/openapi.json", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %.200s", resp.StatusCode, body)
	}
	var doc map[string]any
	mustUnmarshal(t, body, &doc)
	return doc
}

// dig walks a decoded JSON document by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestOpenAPIErrorCodes: Error.code's enum is every error code of
// client/api (its Code* constants), and Image.failure_code's the image
// builds' and imports' failures, so a code added there without being documented fails.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc := openAPIDoc(t)
	enum := func(schema, prop string) map[string]bool {
		out := map[string]bool{}
		list, _ := dig(doc, "components", "schemas", schema, "properties", prop, "enum").([]any)
		for _, v := range list {
			if out[v.(string)] {
				t.Errorf("%s.%s lists %q twice", schema, prop, v)
			}
			out[v.(string)] = true
		}
		return out
	}
	errCodes, imageCodes := enum("Error", "code"), enum("Image", "failure_code")
	consts := apiCodeConstants(t)
	if len(consts) < 40 {
		t.Fatalf("found only %d Code constants in client/api", len(consts))
	}
	for name, code := range consts {
		documented := errCodes
		if strings.HasPrefix(name, "CodeImageBuild") || strings.HasPrefix(name, "CodeImageImport") {
			documented = imageCodes
		}
		if !documented[code] {
			t.Errorf("api.%s (%q) is missing from /openapi.json's enum: add it to errorCodes in server/openapi.go", name, code)
		}
		delete(documented, code)
	}
	for code := range errCodes {
		t.Errorf("Error.code lists %q, which is no client/api constant", code)
	}
	for code := range imageCodes {
		t.Errorf("Image.failure_code lists %q, which is no client/api constant", code)
	}
}

// apiCodeConstants reads client/api's Code* string constants, name → value.
func apiCodeConstants(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range parseGoFiles(t, filepath.Join("..", "client", "api")) {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[name.Name] = v
				}
			}
			return true
		})
	}
	return out
}

// parseGoFiles parses the non-test Go files under dir, its subdirectories
// included (but not testdata, nor the directories named in skip).
func parseGoFiles(t *testing.T, dir string, skip ...string) []*ast.File {
	t.Helper()
	var files []*ast.File
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || slices.Contains(skip, d.Name())) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOpenAPIQueryParameters: every query parameter the control plane,
// the sidecar (whose routes it proxies) or client/api's request parsers
// read is a documented parameter of some operation. The E2B facade
// (server/e2b) is another API with its own contract, and the web console
// (server/console) serves a page, not the API.
func TestOpenAPIQueryParameters(t *testing.T) {
	doc := openAPIDoc(t)
	documented := map[string]bool{"api_key": true} // the apiKeyQuery security scheme
	for _, ops := range doc["paths"].(map[string]any) {
		for _, op := range ops.(map[string]any) {
			params, _ := dig(op, "parameters").([]any)
			for _, p := range params {
				if dig(p, "in") == "query" {
					documented[dig(p, "name").(string)] = true
				}
			}
		}
	}
	read := map[string]string{} // parameter → where
	for _, dir := range []string{".", filepath.Join("..", "sidecar"), filepath.Join("..", "client", "api")} {
		for _, f := range parseGoFiles(t, dir, "e2b", "console") {
			ast.Inspect(f, func(n ast.Node) bool {
				if name, ok := queryRead(n); ok {
					read[name] = f.Name.Name
				}
				return true
			})
		}
	}
	if len(read) < 10 {
		t.Fatalf("found only %d query parameters read: %v", len(read), read)
	}
	for name, pkg := range read {
		if !documented[name] {
			t.Errorf("package %s reads query parameter %q, which /openapi.json documents for no operation", pkg, name)
		}
	}
}

// queryRead reports the parameter n reads when it is a read of a query
// parameter by name: X.Query().Get("name"), q.Get("name") or
// query.Get("name") on url.Values, or queryInt(r, "name", …).
func queryRead(n ast.Node) (string, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return "", false
	}
	lit := func(i int) (string, bool) {
		if i >= len(call.Args) {
			return "", false
		}
		b, ok := call.Args[i].(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		if strings.HasPrefix(fn.Name, "query") {
			return lit(1)
		}
	case *ast.SelectorExpr:
		if fn.Sel.Name != "Get" && fn.Sel.Name != "Has" {
			return "", false
		}
		switch x := fn.X.(type) {
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Query" {
				return lit(0)
			}
		case *ast.Ident:
			if x.Name == "q" || x.Name == "query" {
				return lit(0)
			}
		}
	}
	return "", false
}
