package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

const allowedPath = "/v1/account/allowed-commands"

func replyJSONTo(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func TestAllowedCommandsRoutes(t *testing.T) {
	e := newEnv(t, server.Config{})

	get := func(key string) api.AllowedCommands {
		t.Helper()
		resp, body := e.do("GET", allowedPath, key, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %d %s", resp.StatusCode, body)
		}
		var got api.AllowedCommands
		mustUnmarshal(t, body, &got)
		return got
	}
	if got := get(e.KeyA); got.Rules == nil || len(got.Rules) != 0 {
		t.Errorf("GET with no allowlist = %+v, want {rules: []}", got)
	}

	rules := `{"rules": ["ls", {"command": "curl", "args_allow": ["^https://"], "args_deny": ["-o"]}]}`
	resp, body := e.do("PUT", allowedPath, e.KeyA, rules)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	want := api.AllowedCommands{Rules: []api.CommandRule{{Command: "ls"}, {Command: "curl", ArgsAllow: []string{"^https://"}, ArgsDeny: []string{"-o"}}}}
	if diff := cmp.Diff(want, get(e.KeyA)); diff != "" {
		t.Errorf("GET after PUT (-want +got):\n%s", diff)
	}
	if got := get(e.KeyB); len(got.Rules) != 0 {
		t.Errorf("account B sees rules %+v, want its own (none)", got)
	}

	member := e.addKey(e.AcctA, model.RoleMember)
	resp, body = e.do("PUT", allowedPath, member, `{"rules": ["rm"]}`)
	wantError(t, resp, body, http.StatusForbidden, api.CodeForbidden)
	resp, body = e.do("DELETE", allowedPath, member, nil)
	wantError(t, resp, body, http.StatusForbidden, api.CodeForbidden)
	if diff := cmp.Diff(want, get(member)); diff != "" {
		t.Errorf("member keys may read the list (-want +got):\n%s", diff)
	}

	resp, body = e.do("DELETE", allowedPath, e.KeyA, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	if got := get(e.KeyA); len(got.Rules) != 0 {
		t.Errorf("GET after DELETE = %+v, want no rules", got)
	}
	resp, _ = e.do("DELETE", allowedPath, e.KeyA, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("second DELETE = %d, want 204", resp.StatusCode)
	}
}

func TestAllowedCommandsValidation(t *testing.T) {
	e := newEnv(t, server.Config{})
	many := make([]string, api.MaxAllowlistRules+1)
	for i := range many {
		many[i] = `"p` + strings.Repeat("x", i) + `"`
	}
	tests := []struct {
		name, body, code string
	}{
		{"no rules", `{"rules": []}`, api.CodeInvalidRules},
		{"missing rules", `{}`, api.CodeInvalidRules},
		{"too many rules", `{"rules": [` + strings.Join(many, ",") + `]}`, api.CodeTooManyRules},
		{"pattern too long", `{"rules": [{"command": "curl", "args_allow": ["` + strings.Repeat("a", 201) + `"]}]}`, api.CodePatternTooLong},
		{"pattern does not compile", `{"rules": [{"command": "curl", "args_deny": ["(unclosed"]}]}`, api.CodeInvalidPattern},
		{"rule of the wrong type", `{"rules": [42]}`, api.CodeInvalidRules},
		{"empty command", `{"rules": [""]}`, api.CodeInvalidRules},
		{"not JSON", `rules: ls`, api.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("PUT", allowedPath, e.KeyA, tt.body)
			wantError(t, resp, body, http.StatusBadRequest, tt.code)
		})
	}
	// A body with no rules but other keys names them: a wrong key (the
	// GET's allowed_commands, say) read as "needs at least one rule".
	for _, tt := range []struct{ body, msg string }{
		{`{"allowed_commands": ["ls"]}`, "unknown field allowed_commands"},
		{`{"rule": ["ls"], "Commands": []}`, "unknown fields Commands, rule"},
	} {
		resp, body := e.do("PUT", allowedPath, e.KeyA, tt.body)
		ae := wantError(t, resp, body, http.StatusBadRequest, api.CodeInvalidRules)
		if !strings.Contains(ae.Message, tt.msg) || !strings.Contains(ae.Hint, `send {"rules": [`) {
			t.Errorf("%s: %q, hint %q; want it to name %q", tt.body, ae.Message, ae.Hint, tt.msg)
		}
	}
	resp, body := e.do("GET", allowedPath, e.KeyA, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"rules":[]`) {
		t.Errorf("after refused PUTs: %d %s, want no rules", resp.StatusCode, body)
	}
}

// TestAllowlistEnforced: exec and process start are refused before they
// reach the sidecar; other accounts are unaffected; clearing the list
// allows everything again.
func TestAllowlistEnforced(t *testing.T) {
	e := newEnv(t, server.Config{})
	var starts atomic.Int32
	e.Sidecar.Route("POST /process/start", func(w http.ResponseWriter, r *http.Request) {
		starts.Add(1)
		replyJSONTo(w, http.StatusCreated, api.ProcessStarted{ProcessID: "proc_1", Status: api.ProcessRunning})
	})
	e.Sidecar.Route("POST /interpreter/exec", func(w http.ResponseWriter, r *http.Request) {
		starts.Add(1)
		replyJSONTo(w, http.StatusOK, api.InterpreterExecResult{Stdout: "1\n"})
	})
	sbA := e.create(e.KeyA, api.CreateSandboxRequest{})
	sbB := e.create(e.KeyB, api.CreateSandboxRequest{})
	if resp, body := e.do("PUT", allowedPath, e.KeyA, `{"rules": ["ls", "echo", {"command": "python3", "args_deny": ["-c"]}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	execs := func() int { reqs, _ := e.Sidecar.Requests(); return len(reqs) }

	tests := []struct {
		name    string
		key, id string
		path    string
		body    any
		allowed bool
	}{
		{"exec allowed", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls -la | echo"}, true},
		{"exec refused", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls; rm -rf /workspace"}, false},
		{"exec substitution", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "echo $(id)"}, false},
		{"exec denied args", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "python3 -c 'print(1)'"}, false},
		{"exec of another account", e.KeyB, sbB.ID, "/exec", api.ExecRequest{Command: "rm -rf /workspace"}, true},
		// env sets what an assignment in the command would (seccheck26:
		// GIT_EXTERNAL_DIFF in env ran a planted program under a rule of
		// git diff); the sidecar itself refuses only a few names.
		{"exec env harmless", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls", Env: map[string]string{"FOO": "1"}}, true},
		{"exec env GIT_EXTERNAL_DIFF", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls", Env: map[string]string{"GIT_EXTERNAL_DIFF": "/workspace/x"}}, false},
		{"exec env GCONV_PATH", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls", Env: map[string]string{"GCONV_PATH": "/workspace"}}, false},
		{"exec env SHELLOPTS", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls", Env: map[string]string{"SHELLOPTS": "xtrace", "PS4": "x"}}, false},
		{"exec secret_env PAGER", e.KeyA, sbA.ID, "/exec", api.ExecRequest{Command: "ls", SecretEnv: map[string]string{"PAGER": "token"}}, false},
		{"process allowed", e.KeyA, sbA.ID, "/processes", api.ProcessStartRequest{Command: "python3 -m http.server", MaxRuntimeSeconds: 60}, true},
		{"process refused", e.KeyA, sbA.ID, "/processes", api.ProcessStartRequest{Command: "nc -l 80", MaxRuntimeSeconds: 60}, false},
		{"process wrapper", e.KeyA, sbA.ID, "/processes", api.ProcessStartRequest{Command: "nohup ls", MaxRuntimeSeconds: 60}, false},
		// The interpreter runs code as python3 -c would, which this list denies.
		{"interpreter refused", e.KeyA, sbA.ID, "/interpreter/exec", api.InterpreterExecRequest{Code: "print(1)"}, false},
		{"interpreter of another account", e.KeyB, sbB.ID, "/interpreter/exec", api.InterpreterExecRequest{Code: "print(1)"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beforeExec, beforeStart := execs(), starts.Load()
			resp, body := e.do("POST", sandboxPath(tt.id, tt.path), tt.key, tt.body)
			reached := execs() > beforeExec || starts.Load() > beforeStart
			if tt.allowed {
				if resp.StatusCode/100 != 2 || !reached {
					t.Errorf("%d %s (reached the sidecar: %v), want it run", resp.StatusCode, body, reached)
				}
				return
			}
			ae := wantError(t, resp, body, http.StatusForbidden, api.CodeCommandNotAllowed)
			if ae.Hint == "" {
				t.Error("refusal without a hint")
			}
			if reached {
				t.Error("a refused command reached the sidecar")
			}
		})
	}

	// python3 without argument patterns may run anything, the interpreter included.
	if resp, body := e.do("PUT", allowedPath, e.KeyA, `{"rules": ["python3"]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", sandboxPath(sbA.ID, "/interpreter/exec"), e.KeyA, api.InterpreterExecRequest{Code: "print(1)"}); resp.StatusCode != http.StatusOK {
		t.Errorf("interpreter with python3 allowed: %d %s", resp.StatusCode, body)
	}

	if resp, _ := e.do("DELETE", allowedPath, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp, body := e.do("POST", sandboxPath(sbA.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "rm -rf /tmp/x"}); resp.StatusCode != http.StatusOK {
		t.Errorf("exec after clearing the allowlist: %d %s", resp.StatusCode, body)
	}
}
