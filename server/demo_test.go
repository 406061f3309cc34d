package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

type demoSession struct {
	SessionID string    `json:"session_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

type demoExec struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Truncated bool   `json:"truncated"`
}

// demoCreate posts a create from the test's address (the rate limit is
// per address, so each sub-test has its own server).
func demoCreate(t *testing.T, e *env) (*http.Response, demoSession) {
	t.Helper()
	resp, body := e.do("POST", "/v1/demo/sandboxes", "", nil)
	var s demoSession
	if resp.StatusCode == http.StatusCreated {
		mustUnmarshal(t, body, &s)
	}
	return resp, s
}

func demoRun(t *testing.T, e *env, s demoSession, cmd string) (*http.Response, demoExec) {
	t.Helper()
	resp, body := e.do("POST", "/v1/demo/sandboxes/"+s.SessionID+"/exec", "", map[string]string{"command": cmd}, "X-Demo-Token", s.Token)
	var out demoExec
	if resp.StatusCode == 200 {
		mustUnmarshal(t, body, &out)
	}
	return resp, out
}

// TestDemoPlayground (issue 24, acceptance 5): off by default; on, no key
// is needed, a sandbox expires after 4 minutes, 3 exist at once, output
// is capped at 20 KiB, and creates are rate-limited per client address.
func TestDemoPlayground(t *testing.T) {
	t.Parallel()
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, server.Config{})
		if resp, _ := e.do("POST", "/v1/demo/sandboxes", "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST /v1/demo/sandboxes without --demo-playground: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("no key, 4 minutes, token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, server.Config{DemoPlayground: true})
		resp, s := demoCreate(t, e)
		if resp.StatusCode != http.StatusCreated || s.Token == "" {
			t.Fatalf("create: %d", resp.StatusCode)
		}
		if got := s.ExpiresAt.Sub(e.clock.Now()); got != 4*time.Minute {
			t.Errorf("expires in %v, want 4m", got)
		}
		// It is the demo account's, not any tenant's.
		_, body := e.do("GET", "/v1/sandboxes", e.KeyA, nil)
		if strings.Contains(string(body), s.SessionID) {
			t.Errorf("account A sees the demo sandbox: %s", body)
		}
		if resp, out := demoRun(t, e, s, "echo hi"); resp.StatusCode != 200 || !strings.Contains(out.Stdout, "echo hi") {
			t.Errorf("exec: %d %+v", resp.StatusCode, out)
		}
		if resp, _ := demoRun(t, e, demoSession{SessionID: s.SessionID, Token: "wrong"}, "id"); resp.StatusCode != 404 {
			t.Errorf("exec with a wrong token: %d", resp.StatusCode)
		}
		if resp, body := e.do("POST", "/v1/demo/sandboxes/"+s.SessionID+"/exec", "", map[string]string{"command": strings.Repeat("x", 4001)}, "X-Demo-Token", s.Token); resp.StatusCode != 422 {
			t.Errorf("a 4001-byte command: %d %s", resp.StatusCode, body)
		}
		e.clock.Advance(4*time.Minute - time.Second)
		if resp, _ := demoRun(t, e, s, "echo still"); resp.StatusCode != 200 {
			t.Errorf("exec just before 4 minutes: %d", resp.StatusCode)
		}
		e.clock.Advance(time.Second)
		if resp, _ := demoRun(t, e, s, "echo late"); resp.StatusCode != 404 {
			t.Errorf("exec at 4 minutes: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("3 at once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, server.Config{DemoPlayground: true})
		var ss []demoSession
		for i := range 3 {
			resp, s := demoCreate(t, e)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create %d: %d", i, resp.StatusCode)
			}
			ss = append(ss, s)
		}
		e.clock.Advance(time.Minute) // past the rate limit's minute
		resp, body := e.do("POST", "/v1/demo/sandboxes", "", nil)
		wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeServiceUnavailable)
		// Destroying one frees its slot.
		if resp, body := e.do("DELETE", "/v1/demo/sandboxes/"+ss[0].SessionID, "", nil, "X-Demo-Token", ss[0].Token); resp.StatusCode != 204 {
			t.Fatalf("destroy: %d %s", resp.StatusCode, body)
		}
		if resp, _ := demoCreate(t, e); resp.StatusCode != http.StatusCreated {
			t.Errorf("create after a destroy: %d", resp.StatusCode)
		}
		// Expiry frees them too.
		e.clock.Advance(4 * time.Minute)
		if resp, _ := demoCreate(t, e); resp.StatusCode != http.StatusCreated {
			t.Errorf("create after expiry: %d", resp.StatusCode)
		}
	})

	t.Run("20 KiB output", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, server.Config{DemoPlayground: true})
		var asked int64
		e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
			asked = req.MaxOutputBytes
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(api.ExecResult{Stdout: strings.Repeat("y", 64<<10)})
		}
		_, s := demoCreate(t, e)
		resp, out := demoRun(t, e, s, "yes")
		if resp.StatusCode != 200 || len(out.Stdout) != 20<<10 || !out.Truncated {
			t.Errorf("exec: %d, %d bytes, truncated %v", resp.StatusCode, len(out.Stdout), out.Truncated)
		}
		if asked != 20<<10 {
			t.Errorf("the sidecar was asked for %d bytes, want 20480", asked)
		}
	})

	t.Run("rate per address", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, server.Config{DemoPlayground: true})
		var last demoSession
		for i := range 3 {
			resp, s := demoCreate(t, e)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create %d: %d", i, resp.StatusCode)
			}
			last = s
		}
		// A slot is free again, but the address spent its 3 a minute.
		if resp, body := e.do("DELETE", "/v1/demo/sandboxes/"+last.SessionID, "", nil, "X-Demo-Token", last.Token); resp.StatusCode != 204 {
			t.Fatalf("destroy: %d %s", resp.StatusCode, body)
		}
		resp, body := e.do("POST", "/v1/demo/sandboxes", "", nil)
		wantError(t, resp, body, http.StatusTooManyRequests, api.CodeRateLimited)
		if resp.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
		e.clock.Advance(time.Minute)
		if resp, _ := demoCreate(t, e); resp.StatusCode != http.StatusCreated {
			t.Errorf("create a minute later: %d", resp.StatusCode)
		}
	})
}
