package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/secrets"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestSecretNeverInSandbox (issue 23, acceptance 1) through the real
// server and the local driver: a secret used through http-request reaches
// a server on 127.0.0.1 with its value in a header, and the value is in
// none of the sandbox's process environments, process arguments or
// writable files, nor in the audit log, the server log, the metrics, the
// tool's result or the database file. (The value never goes to a driver,
// so the kube driver holds the same: see docs/secrets.md.)
func TestSecretNeverInSandbox(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("the local driver's jails need root")
	}
	logs := &lockedbuf.Buffer{}
	dbPath := filepath.Join(t.TempDir(), "boxkite.db")
	s := servertest.New(t, servertest.WithSecrets(secrets.Config{
		PermitForTests: server.EgressPermitLoopbackForTests, DialForTests: tlsFrontDial, RootCAsForTests: tlsFrontRoots(),
	}), servertest.WithDBPath(dbPath),
		servertest.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	re := &realEnv{t: t, s: s}
	up := newEchoServer(t)
	const value = "sv_ACCEPTANCE_4b1d9e0f7a2c6358"

	resp, body := re.do("POST", "/v1/secrets", s.APIKey, jsonBody(t, api.CreateSecretRequest{Name: "SERVICE_TOKEN", Value: value, AllowedHosts: []string{"127.0.0.1"}}))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create secret: %d %s", resp.StatusCode, body)
	}
	resp, body = re.do("POST", "/v1/sandboxes", s.APIKey, jsonBody(t, api.CreateSandboxRequest{SecretNames: []string{"SERVICE_TOKEN"}}))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create sandbox: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &re.sb)

	resp, toolResult := re.do("POST", re.path("/http-request"), s.APIKey, jsonBody(t, api.HTTPRequest{
		Method: "POST", URL: up.URL + "/echo", Headers: map[string]string{"Authorization": "Bearer {{secret:SERVICE_TOKEN}}"}, Body: `{"k":"{{secret:SERVICE_TOKEN}}"}`,
	}))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("http-request: %d %s", resp.StatusCode, toolResult)
	}
	if reqs := up.requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+value {
		t.Fatalf("the test server did not get the value in the header: %v", reqs)
	}
	// Outside the allowed hosts: refused with a stable code.
	resp, body = re.do("POST", re.path("/http-request"), s.APIKey, jsonBody(t, api.HTTPRequest{URL: "https://elsewhere.example.com/?t={{secret:SERVICE_TOKEN}}"}))
	wantError(t, resp, body, http.StatusForbidden, api.CodeDestinationNotAllowed)

	// Inside the sandbox: every process's environment and arguments, and
	// every writable place, searched for the value. The search gets it in
	// two halves, joined only in a pipe (grep -f -), so no command line of
	// the search holds it whole.
	const script = `printf '%s%s' "$1" "$2" | grep -l -F -f - /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; ` +
		`printf '%s%s' "$1" "$2" | grep -r -l -D skip -F -f - /workspace /tmp /run /var /home /root /etc 2>/dev/null; ` +
		`ls /proc | grep -c '^[0-9]'`
	half := len(value) / 2
	cmd := fmt.Sprintf(`sh -c '%s' sh %s %s`, script, value[:half], value[half:])
	resp, body = re.do("POST", re.path("/exec"), s.APIKey, jsonBody(t, api.ExecRequest{Command: cmd}))
	var res api.ExecResult
	mustUnmarshal(t, body, &res)
	lines := strings.Fields(res.Stdout)
	if resp.StatusCode != http.StatusOK || len(lines) != 1 || lines[0] == "0" {
		// The one line is the count of processes searched.
		t.Errorf("the value is in the sandbox (files that hold it, then the processes searched): %d %q %q", resp.StatusCode, res.Stdout, res.Stderr)
	}

	_, logPage := re.do("GET", re.path("/log"), s.APIKey, nil)
	if !strings.Contains(string(logPage), `"secrets":["SERVICE_TOKEN"]`) {
		t.Errorf("the audit log does not record the secret's use: %s", logPage)
	}
	_, metrics := re.do("GET", "/metrics", "", nil)
	var tr api.HTTPResponse
	mustUnmarshal(t, toolResult, &tr)
	if !strings.Contains(tr.Body, "[REDACTED_SECRET:SERVICE_TOKEN]") {
		t.Errorf("the echo is not redacted: %s", toolResult)
	}
	for what, text := range map[string]string{"audit log": string(logPage), "server log": logs.String(), "metrics": string(metrics), "tool result": string(toolResult)} {
		if strings.Contains(text, value) {
			t.Errorf("the %s has the value", what)
		}
	}
	s.Kill() // closes the store: the WAL is checkpointed into the file
	files, _ := filepath.Glob(dbPath + "*")
	for _, f := range files {
		if b, err := os.ReadFile(f); err != nil || strings.Contains(string(b), value) {
			t.Errorf("%s holds the value (or cannot be read: %v)", f, err)
		}
	}
}

func jsonBody(t *testing.T, v any) *strings.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(string(b))
}
