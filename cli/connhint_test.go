package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestConnHintNamesTheRightServer: when nothing answers at a loopback URL,
// 'boxkite up' is the advice only for the stack up starts (local.toml's
// URL); another context, or a URL from the environment, is some other
// server, tunnel or port-forward. Port 1 refuses every connection here.
func TestConnHintNamesTheRightServer(t *testing.T) {
	const down = "http://127.0.0.1:1"
	tests := []struct {
		name  string
		setup func(t *testing.T, home string)
		args  []string
		want  string
		not   string
	}{
		{
			name: "the local stack",
			setup: func(t *testing.T, home string) {
				writeFile(t, filepath.Join(home, localFile), "base_url = '"+down+"'\napi_key = 'bxk_live_x'\n")
			},
			args: []string{"session", "ls"},
			want: "hint: run 'boxkite up' to start the local server",
		},
		{
			name: "an added context on loopback",
			setup: func(t *testing.T, _ string) {
				if r := runCLI(t, "", "context", "add", "stg", down, "--api-key", "bxk_live_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"); r.code != 0 {
					t.Fatalf("context add: %+v", r)
				}
			},
			args: []string{"--context", "stg", "session", "ls"},
			want: "not the server 'boxkite up' starts: start the server there, or the tunnel or port-forward to it; or point the context elsewhere with 'boxkite --context stg config set-url URL'",
			not:  "run 'boxkite up'",
		},
		{
			name:  "a URL from the environment",
			setup: func(t *testing.T, _ string) { t.Setenv(envURL, down) },
			args:  []string{"session", "ls"},
			want:  "(the base URL from env BOXKITE_URL), which is not the server 'boxkite up' starts",
			not:   "run 'boxkite up'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t, isolate(t))
			r := runCLI(t, "", tt.args...)
			if r.code != exitError || !strings.Contains(r.stderr, "error: cannot reach the boxkite server at "+down) ||
				!strings.Contains(r.stderr, tt.want) || (tt.not != "" && strings.Contains(r.stderr, tt.not)) {
				t.Errorf("boxkite %q: exit %d, stderr %q; want exit 1 and %q", tt.args, r.code, r.stderr, tt.want)
			}
		})
	}
}

// TestBastionHintNamesTheRightBastion: 'boxkite up' starts only the local
// stack's bastion; another context's unreachable bastion gets the advice
// to check its address.
func TestBastionHintNamesTheRightBastion(t *testing.T) {
	home := isolate(t)
	srv := fakeAPI(t, map[string]http.HandlerFunc{
		"GET /v1/sandboxes": replyJSON(200, []api.Sandbox{{ID: "sb_0123abcd", Status: api.StatusActive}}),
	})
	if err := os.MkdirAll(filepath.Join(home, "contexts"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "contexts", "stg.toml"),
		"base_url = '"+srv.URL+"'\napi_key = 'bxk_live_x'\nbastion = '127.0.0.1:1'\n")
	r := runCLI(t, "", "--context", "stg", "ssh", "-s", "sb_0123", "--token")
	if r.code != exitError || !strings.Contains(r.stderr, "boxkite-bastion is not reachable at 127.0.0.1:1") ||
		!strings.Contains(r.stderr, "hint: check the address") || strings.Contains(r.stderr, "boxkite up") {
		t.Errorf("ssh: exit %d, stderr %q; want exit 1 and the hint to check the address", r.code, r.stderr)
	}
}
