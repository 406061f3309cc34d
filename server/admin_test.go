package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestAdminOperator (issue 24, acceptance 5): the operator role is the
// server's configuration; a non-operator — even with an admin key —
// gets 403 on every /v1/admin/* route; the operator sees every account;
// every call, allowed or refused, is in the admin access log.
func TestAdminOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{Operators: []string{"Op@Example.com"}})
	_, opKey := e.addAccount("op@example.com", model.RoleMember)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{Label: "a-box"})
	if resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "echo hi"}); resp.StatusCode != 200 {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	routes := []string{"/v1/admin/metrics", "/v1/admin/audit-log", "/v1/admin/access-log"}

	// A non-operator: A's admin key, B's key, and no key.
	for _, path := range routes {
		for _, key := range []string{e.KeyA, e.KeyB} {
			resp, body := e.do("GET", path, key, nil)
			if ae := wantError(t, resp, body, http.StatusForbidden, api.CodeForbidden); !strings.Contains(ae.Hint, "--operator") {
				t.Errorf("%s: hint %q", path, ae.Hint)
			}
		}
		resp, body := e.do("GET", path, "", nil)
		wantError(t, resp, body, http.StatusUnauthorized, api.CodeUnauthorized)
	}
	// Unauthenticated attempts (401) are logged too, without the secret
	// presented: a bad key, an access token, a key sent as ?api_key=.
	badKey := model.NewAPIKey()
	resp, _ := e.do("GET", "/v1/admin/metrics", badKey, nil)
	tok := e.signup("eve@example.com", "correct horse")
	resp2, _ := e.do("GET", "/v1/admin/audit-log", tok.AccessToken, nil)
	resp3, _ := e.do("GET", "/v1/admin/access-log?api_key="+e.KeyA, "", nil)
	if resp.StatusCode != 401 || resp2.StatusCode != 401 || resp3.StatusCode != 401 {
		t.Fatalf("bad key %d, access token %d, ?api_key %d: want 401s", resp.StatusCode, resp2.StatusCode, resp3.StatusCode)
	}

	// The operator.
	var m api.AdminMetrics
	resp, body := e.do("GET", "/v1/admin/metrics", opKey, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d %s", resp.StatusCode, body)
	}
	mustUnmarshal(t, body, &m)
	// Four accounts: eve signed up above.
	if m.TotalAccounts != 4 || m.GlobalConcurrentSandboxes != 1 || len(m.Accounts) != 4 ||
		m.Accounts[0].AccountID != e.AcctA.ID || m.Accounts[0].ConcurrentSandboxes != 1 || m.Accounts[0].Email != "a@example.com" {
		t.Errorf("metrics = %+v", m)
	}
	var log []api.LogEntry
	resp, body = e.do("GET", "/v1/admin/audit-log?limit=5", opKey, nil)
	mustUnmarshal(t, body, &log)
	if resp.StatusCode != 200 || len(log) == 0 || log[0].AccountID != e.AcctA.ID || log[0].SessionID != sb.ID {
		t.Errorf("audit log: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/v1/admin/audit-log?account_id="+model.NewID(), opKey, nil)
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("audit log of no account: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(time.Second) // the access log is newest first
	resp, body = e.do("GET", "/v1/admin/audit-log?limit=501", opKey, nil)
	wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)

	var access []api.AdminAccess
	resp, body = e.do("GET", "/v1/admin/access-log?limit=500", opKey, nil)
	mustUnmarshal(t, body, &access)
	if resp.StatusCode != 200 {
		t.Fatalf("access log: %d %s", resp.StatusCode, body)
	}
	count := map[string]int{}
	for _, a := range access {
		count[a.Email+" "+a.Path+" "+http.StatusText(a.Status)]++
	}
	want := map[string]int{
		"op@example.com /v1/admin/metrics OK":                     1,
		"op@example.com /v1/admin/audit-log OK":                   2,
		"op@example.com /v1/admin/audit-log Unprocessable Entity": 1,
		"a@example.com /v1/admin/metrics Forbidden":               1,
		"b@example.com /v1/admin/access-log Forbidden":            1,
		" /v1/admin/metrics Unauthorized":                         2,
		" /v1/admin/audit-log Unauthorized":                       2,
		" /v1/admin/access-log Unauthorized":                      2,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("access log has %d of %q, want %d: %v", count[k], k, n, count)
		}
	}
	for _, a := range access {
		if a.Status == 401 && (a.AccountID != "" || a.KeyID != "" || strings.Contains(a.Query, e.KeyA)) {
			t.Errorf("an unauthenticated row names a caller or keeps the key: %+v", a)
		}
	}
	if len(access) == 0 || access[0].Path != "/v1/admin/audit-log" || access[0].Query != "limit=501" {
		t.Errorf("the newest line is not the last call before this one: %+v", access[0])
	}
}
