package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusNamesTheRightServer: status shows up's processes (server.pid,
// bastion.pid) and advises 'boxkite up' only for the stack up starts;
// a loopback URL from --url or BOXKITE_URL that names another port is
// some other server, which server.pid says nothing about and up would
// not start. Port 1 refuses every connection here.
func TestStatusNamesTheRightServer(t *testing.T) {
	const down = "http://127.0.0.1:1"
	const stackHint = "hint: run 'boxkite up' to start the local server"
	tests := []struct {
		name     string
		setup    func(t *testing.T, home string)
		args     []string
		stack    bool   // the server and bastion rows, and up's hint
		wantHint string // otherwise
	}{
		{
			name: "the local stack",
			setup: func(t *testing.T, home string) {
				writeFile(t, filepath.Join(home, localFile), "base_url = '"+down+"'\napi_key = 'bxk_live_x'\n")
			},
			args:  []string{"status"},
			stack: true,
		},
		{
			name: "the local stack's URL from the environment",
			setup: func(t *testing.T, home string) {
				writeFile(t, filepath.Join(home, localFile), "base_url = '"+down+"/'\napi_key = 'bxk_live_x'\n")
				t.Setenv(envURL, down)
			},
			args:  []string{"status"},
			stack: true,
		},
		{
			name: "another port from --url",
			setup: func(t *testing.T, home string) {
				writeFile(t, filepath.Join(home, localFile), "base_url = '"+DefaultURL+"'\napi_key = 'bxk_live_x'\nbastion = '127.0.0.1:2222'\n")
			},
			args:     []string{"--url", down, "status"},
			wantHint: "hint: nothing listens at " + down + " (the base URL from flag --url), which is not the server 'boxkite up' starts",
		},
		{
			name:     "another port from the environment, before any up",
			setup:    func(t *testing.T, _ string) { t.Setenv(envURL, down) },
			args:     []string{"status"},
			wantHint: "hint: nothing listens at " + down + " (the base URL from env BOXKITE_URL), which is not the server 'boxkite up' starts",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t, isolate(t))
			r := runCLI(t, "", tt.args...)
			if r.code != exitError || !strings.Contains(r.stdout, "ready:    no (cannot reach the boxkite server at "+down+")") {
				t.Fatalf("boxkite %q: exit %d, stdout %q; want exit 1 and not ready", tt.args, r.code, r.stdout)
			}
			rows := strings.Contains(r.stdout, "\nserver:   not running\n") && strings.Contains(r.stdout, "\nbastion:  not running\n")
			if tt.stack {
				if !rows || !strings.Contains(r.stderr, stackHint) {
					t.Errorf("boxkite %q: stdout %q, stderr %q; want the server and bastion rows and %q", tt.args, r.stdout, r.stderr, stackHint)
				}
				return
			}
			if strings.Contains(r.stdout, "server:") || strings.Contains(r.stdout, "bastion:") ||
				strings.Contains(r.stderr, stackHint) || !strings.Contains(r.stderr, tt.wantHint) {
				t.Errorf("boxkite %q: stdout %q, stderr %q; want no server or bastion rows, and %q", tt.args, r.stdout, r.stderr, tt.wantHint)
			}
		})
	}
}
