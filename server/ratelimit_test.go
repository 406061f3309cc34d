package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// wantRateHeaders checks the X-RateLimit headers of a limited route.
func wantRateHeaders(t *testing.T, resp *http.Response, limit, remaining int) {
	t.Helper()
	if got := resp.Header.Get(api.HeaderRateLimitLimit); got != strconv.Itoa(limit) {
		t.Errorf("%s = %q, want %d", api.HeaderRateLimitLimit, got, limit)
	}
	if got := resp.Header.Get(api.HeaderRateLimitRemaining); got != strconv.Itoa(remaining) {
		t.Errorf("%s = %q, want %d", api.HeaderRateLimitRemaining, got, remaining)
	}
}

// wantRateLimited checks a 429 rate_limited in the flat envelope with
// Retry-After.
func wantRateLimited(t *testing.T, resp *http.Response, body []byte, retryAfter int) {
	t.Helper()
	wantError(t, resp, body, http.StatusTooManyRequests, api.CodeRateLimited)
	if got := resp.Header.Get(api.HeaderRetryAfter); got != strconv.Itoa(retryAfter) {
		t.Errorf("Retry-After = %q, want %d", got, retryAfter)
	}
	if bytes.Contains(body, []byte(`"detail"`)) {
		t.Errorf("429 body nests the error under detail (the reference's quirk): %s", body)
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{RateLimits: server.RateLimits{Lifecycle: 2, Ops: 3, Auth: -1}})

	// Lifecycle: create, extend and delete share a per-account budget.
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, nil)
	wantRateHeaders(t, resp, 2, 1)
	var sb api.Sandbox
	mustUnmarshal(t, body, &sb)
	resp, _ = e.do("POST", sandboxPath(sb.ID, "/extend"), e.KeyA, api.ExtendSandboxRequest{LifetimeMinutes: 60})
	wantRateHeaders(t, resp, 2, 0)
	e.clock.Advance(20 * time.Second)
	resp, body = e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
	wantRateLimited(t, resp, body, 40)
	wantRateHeaders(t, resp, 2, 0)
	// Another account has its own budget.
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyB, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("B's create = %d %s", resp.StatusCode, body)
	}

	// Ops: exec and the tool routes; reads of sandboxes and the log are free.
	for i := range 3 {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "true"})
		if resp.StatusCode != 200 {
			t.Fatalf("exec %d: %d %s", i, resp.StatusCode, body)
		}
		wantRateHeaders(t, resp, 3, 2-i)
	}
	resp, body = e.do("POST", sandboxPath(sb.ID, "/files/ls"), e.KeyA, map[string]string{"path": "/"})
	wantRateLimited(t, resp, body, 60) // the ops window began with the first exec
	for _, path := range []string{sandboxPath(sb.ID), sandboxPath(sb.ID, "/log"), "/v1/sandboxes", "/v1/account"} {
		resp, body := e.do("GET", path, e.KeyA, nil)
		if resp.StatusCode != 200 || resp.Header.Get(api.HeaderRateLimitLimit) != "" {
			t.Errorf("GET %s = %d with %s %q; want 200 and no rate-limit headers (%s)",
				path, resp.StatusCode, api.HeaderRateLimitLimit, resp.Header.Get(api.HeaderRateLimitLimit), body)
		}
	}

	// The window ends a minute after it began.
	e.clock.Advance(40 * time.Second)
	resp, body = e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete in the next window: %d %s", resp.StatusCode, body)
	}
	wantRateHeaders(t, resp, 2, 1)
}

// TestAuthRateLimits: signup and login are limited per client IP, and
// login also per email, so guessing from many addresses is no faster.
func TestAuthRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{RateLimits: server.RateLimits{Auth: 2}})
	from := func(ip, path string, c api.Credentials) *httptest.ResponseRecorder {
		b, _ := json.Marshal(c)
		req := httptest.NewRequest("POST", path, bytes.NewReader(b))
		req.RemoteAddr = ip + ":40000"
		rec := httptest.NewRecorder()
		e.Server.ServeHTTP(rec, req)
		return rec
	}
	wrong := api.Credentials{Email: "victim@example.com", Password: "guess-guess"}
	if rec := from("10.0.0.1", "/v1/auth/signup", api.Credentials{Email: "victim@example.com", Password: "the real one"}); rec.Code != 201 {
		t.Fatalf("signup: %d %s", rec.Code, rec.Body)
	}
	rec := from("10.0.0.1", "/v1/auth/login", wrong)
	if rec.Code != 401 || rec.Header().Get(api.HeaderRateLimitRemaining) != "0" {
		t.Errorf("second request from the IP = %d, remaining %q; want 401, 0", rec.Code, rec.Header().Get(api.HeaderRateLimitRemaining))
	}
	rec = from("10.0.0.1", "/v1/auth/signup", api.Credentials{Email: "x@example.com", Password: "whatever1"})
	if rec.Code != 429 || rec.Header().Get(api.HeaderRetryAfter) == "" {
		t.Errorf("third request from the IP = %d %s, want 429 with Retry-After", rec.Code, rec.Body)
	}
	// Other IPs: the first login for the email is its second attempt (per
	// email) and still allowed; the next is refused though the IP is fresh.
	if rec := from("10.0.0.2", "/v1/auth/login", wrong); rec.Code != 401 {
		t.Errorf("login from a second IP = %d %s, want 401", rec.Code, rec.Body)
	}
	if rec := from("10.0.0.3", "/v1/auth/login", wrong); rec.Code != 429 {
		t.Errorf("login from a third IP = %d %s, want 429 (per-email budget spent)", rec.Code, rec.Body)
	}
	// Another email from a fresh IP is unaffected.
	if rec := from("10.0.0.4", "/v1/auth/login", api.Credentials{Email: "other@example.com", Password: "guess-guess"}); rec.Code != 401 {
		t.Errorf("another email = %d %s, want 401", rec.Code, rec.Body)
	}
}

// TestAuthRateLimitIPv6Prefix: the auth limit counts an IPv6 /64 as one
// client, so a host rotating through the addresses of its /64 shares one
// budget; another /64 has its own.
func TestAuthRateLimitIPv6Prefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{RateLimits: server.RateLimits{Auth: 2}})
	signup := func(addr, email string) *httptest.ResponseRecorder {
		b, _ := json.Marshal(api.Credentials{Email: email, Password: "a long password"})
		req := httptest.NewRequest("POST", "/v1/auth/signup", bytes.NewReader(b))
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		e.Server.ServeHTTP(rec, req)
		return rec
	}
	for i, addr := range []string{"[2001:db8:5:6::1]:40000", "[2001:db8:5:6:ffff:1:2:3]:40001"} {
		if rec := signup(addr, fmt.Sprintf("v6-%d@example.com", i)); rec.Code != 201 {
			t.Fatalf("signup %d from %s: %d %s", i, addr, rec.Code, rec.Body)
		}
	}
	if rec := signup("[2001:db8:5:6:aaaa::9]:40002", "v6-2@example.com"); rec.Code != 429 {
		t.Errorf("third address of the /64 = %d %s, want 429 (the /64's budget is spent)", rec.Code, rec.Body)
	}
	if rec := signup("[2001:db8:5:7::1]:40000", "v6-3@example.com"); rec.Code != 201 {
		t.Errorf("another /64 = %d %s, want 201", rec.Code, rec.Body)
	}
}

// TestLocalModeRateLimits: a server with a bootstrap key (local mode)
// defaults to generous limits; a shared one to the reference's.
func TestLocalModeRateLimits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  server.Config
		want server.RateLimits
	}{
		{"shared", server.Config{}, server.RateLimits{Lifecycle: 20, Ops: 120, Auth: 10, Snapshot: 10}},
		{"local", server.Config{BootstrapAPIKey: model.NewAPIKey()}, server.RateLimits{Lifecycle: 1000, Ops: 10000, Auth: 100, Snapshot: 1000}},
		{
			"set",
			server.Config{BootstrapAPIKey: model.NewAPIKey(), RateLimits: server.RateLimits{Ops: 5, Auth: -1}},
			server.RateLimits{Lifecycle: 1000, Ops: 5, Auth: -1, Snapshot: 1000},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.WithDefaults().RateLimits; got != tt.want {
				t.Errorf("RateLimits = %+v, want %+v", got, tt.want)
			}
		})
	}
}
