package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestEmptyListNotes: a list with nothing in it prints no table, and says
// on stderr how to make the first one; --json prints [] and no note.
func TestEmptyListNotes(t *testing.T) {
	home := isolate(t)
	empty := replyJSON(200, []any{})
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes":        empty,
		"GET /v1/api-keys":         empty,
		"GET /v1/account/ssh-keys": empty,
		"GET /v1/images":           empty,
		"GET /v1/volumes":          empty,
		"GET /v1/mcp-connections":  empty,
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")
	tests := []struct {
		args []string
		note string
	}{
		{[]string{"session", "ls"}, "no active sandboxes; create one with 'boxkite session create' (--all lists destroyed ones too)\n"},
		{[]string{"session", "ls", "--all"}, "no sandboxes; create one with 'boxkite session create'\n"},
		{[]string{"keys", "ls"}, "no API keys; create one with 'boxkite keys create --name NAME'\n"},
		{[]string{"ssh-keys", "ls"}, "no SSH keys; add one with 'boxkite ssh-keys add ~/.ssh/id_ed25519.pub'\n"},
		{[]string{"images", "ls"}, "no images; build one with 'boxkite images build --apt-package NAME' or import one with 'boxkite images import FILE.tar'\n"},
		{[]string{"volumes", "ls"}, "no volumes; create one with 'boxkite volumes create --label NAME'\n"},
		{[]string{"mcp-connections", "ls"}, "no MCP connections; create one with 'boxkite mcp-connections create LABEL CATALOG_ID'\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != 0 || r.stdout != "" || r.stderr != tt.note {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0, nothing, %q", r.code, r.stdout, r.stderr, tt.note)
			}
			r = runCLI(t, "", append(tt.args, "--json")...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" || r.stderr != "" {
				t.Errorf("--json: exit %d, stdout %q, stderr %q; want [] alone", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestVersionAsksServer: version names the server's version, the context
// and its URL; an unreachable server is said, not a failure; --client
// asks nothing.
func TestVersionAsksServer(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /health": replyJSON(200, api.Health{Status: "healthy", Version: "v1.2.3"}),
	})
	writeFile(t, filepath.Join(home, localFile), "base_url = '"+srv.URL+"'\napi_key = 'k'\n")

	r := runCLI(t, "", "version", "--json", "server", "--jq", `.server | "\(.context) \(.url) \(.version)"`)
	if want := "local " + srv.URL + " v1.2.3\n"; r.code != 0 || r.stdout != want {
		t.Errorf("version --json server: %+v, want %q", r, want)
	}
	r = runCLI(t, "", "version")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "boxkite test (") ||
		lines[1] != "server: boxkite-server v1.2.3 at "+srv.URL+" (context local)" {
		t.Errorf("version:\n%s", r.stdout)
	}
	r = runCLI(t, "", "version", "--client", "--json")
	if r.code != 0 || strings.Contains(r.stdout, `"server"`) {
		t.Errorf("version --client --json asked the server:\n%s", r.stdout)
	}
	srv.Close()
	r = runCLI(t, "", "version", "--jq", ".server.error")
	if r.code != 0 || !strings.Contains(r.stdout, "cannot reach the boxkite server at "+srv.URL) {
		t.Errorf("version with the server down: %+v", r)
	}
}
