package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// goMain is a Go file whose line 5 ends in "fmt.", where completion asks.
const goMain = `package main

import "fmt"

func main() {
	fmt.
}
`

var lspIDRE = regexp.MustCompile(`lsp_[0-9a-f]+`)

// TestLSPGo drives gopls inside a real jail, through both the routes and
// the lsp_* tools: start, open a file of a module written with the file
// routes, complete after "fmt.", stop. gopls and go must be in
// /usr/local/bin (the jail binds /usr); .ci/run installs them.
func TestLSPGo(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tb := sb.toolbox(t)
	sb.ok("POST", "/files", api.FileCreateRequest{Path: "hello/go.mod", Content: "module example.com/hello\n\ngo 1.22\n"})
	sb.ok("POST", "/files", api.FileCreateRequest{Path: "hello/main.go", Content: goMain})

	started := tb.call("lsp_start", `{"language":"go"}`)
	id := lspIDRE.FindString(started)
	if started != "Started language server "+id+" for go" {
		t.Fatalf("lsp_start = %q", started)
	}
	base := "/lsp/" + id
	sb.ok("POST", base+"/open", api.LSPOpenRequest{Path: "hello/main.go", Content: goMain})
	var res api.LSPCompletionResult
	mustDecode(t, sb.ok("POST", base+"/completion", api.LSPCompletionRequest{Path: "hello/main.go", Line: 5, Character: 5}), &res)
	var labels []string
	for _, raw := range res.Items {
		var item struct {
			Label string `json:"label"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			t.Fatalf("completion item %s: %v", raw, err)
		}
		labels = append(labels, item.Label)
	}
	if !containsAll(labels, "Println", "Sprintf", "Errorf") {
		t.Errorf("completion after fmt. = %v, want Println, Sprintf and Errorf among them", labels)
	}

	// The tool reads the file from disk and sends it before asking.
	tb.run([]toolStep{
		{name: "lsp_completion", args: `{"lsp_id":"` + id + `","path":"hello/main.go","line":5,"character":5}`, has: []string{"- Println (Function): func(a ...any) (n int, err error)"}},
		{name: "lsp_completion", args: `{"lsp_id":"` + id + `","path":"hello/missing.go","line":0,"character":0}`, has: []string{"Error [not_found]: File not found"}},
	})

	// Paths are contained as on every other route.
	for _, c := range []struct{ rest, body string }{
		{"/open", `{"path":"/etc/passwd","content":""}`},
		{"/open", `{"path":"../../etc/x.go","content":""}`},
		{"/completion", `{"path":"/run/boxkite/x.go","line":0,"character":0}`},
	} {
		status, body := sb.route("POST", base+c.rest, c.body)
		wantErr(t, c.rest+" "+c.body, status, body, http.StatusBadRequest, "outside allowed roots")
	}

	tb.run([]toolStep{{name: "lsp_stop", args: `{"lsp_id":"` + id + `"}`, want: "Stopped language server " + id}})
	status, body := sb.route("POST", base+"/completion", api.LSPCompletionRequest{Path: "hello/main.go", Line: 5, Character: 5})
	wantErr(t, "completion after stop", status, body, http.StatusNotFound, "")
}

func containsAll(have []string, want ...string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}
