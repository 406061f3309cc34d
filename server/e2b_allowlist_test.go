package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b/envd"
)

// TestE2BAllowlist (seccheck26): an E2B command passes the account's
// allowlist as what it is, not only as the script of anything named like
// a shell. Before, under an allowlist of ls, each of these reached the
// sidecar: a planted program named bash (/workspace/bin/bash -c ls), an
// interactive shell reading an rc file of the workspace (bash -i --rcfile
// F -c ls), an environment that loads code (LD_PRELOAD, BASH_ENV), bash's
// arithmetic sinks (printf -v 'a[x]'); and the SDK's login shell ran the
// workspace's .bash_profile. Now each is refused before the sidecar sees
// it, and the login shell reads no startup file under an allowlist.
func TestE2BAllowlist(t *testing.T) {
	t.Parallel()
	e, _, id, token := e2bFileOpsEnv(t, server.Config{})
	var mu sync.Mutex
	var started []string
	e.Sidecar.Route("/exec/interactive", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		started = append(started, r.URL.Query().Get("command"))
		mu.Unlock()
		http.Error(w, "not served here", http.StatusServiceUnavailable)
	})
	start := func(cmd string, args []string, envs map[string]string) []byte {
		t.Helper()
		msg, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": cmd, "args": args, "envs": envs}})
		_, body := e2bsdk.Do(t, e.URL, "POST", "/process.Process/Start", http.Header{
			"Content-Type":             {"application/connect+json"},
			"Connect-Protocol-Version": {"1"},
			"X-Access-Token":           {token},
			envd.HeaderSandboxID:       {id},
			envd.HeaderSandboxPort:     {envd.PortEnvd},
		}, string(e2bsdk.Envelope(msg)))
		return body
	}
	if resp, body := e.do("PUT", "/v1/account/allowed-commands", e.KeyA, api.AllowedCommands{Rules: []api.CommandRule{{Command: "ls"}, {Command: "printf"}}}); resp.StatusCode != 200 {
		t.Fatalf("set the allowlist: %d %s", resp.StatusCode, body)
	}
	for _, tt := range []struct {
		name string
		cmd  string
		args []string
		envs map[string]string
	}{
		{"planted program named bash", "/workspace/bin/bash", []string{"-c", "ls"}, nil},
		{"planted program named sh, relative", "./sh", []string{"-l", "-c", "ls"}, nil},
		{"interactive shell with an rc file", "/bin/bash", []string{"-i", "--rcfile", "/home/user/rc", "-c", "ls"}, nil},
		{"LD_PRELOAD", "/bin/bash", []string{"-l", "-c", "ls"}, map[string]string{"LD_PRELOAD": "/home/user/x.so"}},
		{"BASH_ENV", "/bin/bash", []string{"-c", "ls"}, map[string]string{"BASH_ENV": "/home/user/x.sh"}},
		{"PATH", "/bin/bash", []string{"-l", "-c", "ls"}, map[string]string{"PATH": "/home/user/bin"}},
		{"arithmetic sink", "/bin/bash", []string{"-l", "-c", `x=b[\$\(./run\)]; printf -v 'a[x]' 1`}, nil},
	} {
		body := start(tt.cmd, tt.args, tt.envs)
		if !strings.Contains(string(body), "permission_denied") || !strings.Contains(string(body), "command not allowed") {
			t.Errorf("%s: %s %q %v = %q, want permission_denied: command not allowed", tt.name, tt.cmd, tt.args, tt.envs, body)
		}
	}
	mu.Lock()
	if len(started) != 0 {
		t.Errorf("refused commands reached the sidecar: %q", started)
	}
	mu.Unlock()

	// The SDK's commands.run: allowed, in a login shell that reads no
	// startup file from the workspace.
	start("/bin/bash", []string{"-l", "-c", "ls"}, map[string]string{"FOO": "bar"})
	mu.Lock()
	defer mu.Unlock()
	if len(started) != 1 || !strings.Contains(started[0], `'/bin/bash' '--noprofile' '-l' '-c' 'ls'`) {
		t.Errorf("commands.run started %q, want /bin/bash --noprofile -l -c ls", started)
	}
}
