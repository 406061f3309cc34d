package server_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// TestLimitsOrder: each fair-use limit refuses with its code and details,
// and when several are exceeded the first in the reference's order wins.
func TestLimitsOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     server.Config
		setup   func(e *env) // what A and B have before A's create
		req     api.CreateSandboxRequest
		code    string
		details map[string]any
	}{
		{
			name: "global capacity first",
			cfg:  server.Config{Limits: server.Limits{GlobalConcurrent: 2, AccountConcurrent: 1, MaxSize: api.SizeSmall}},
			setup: func(e *env) {
				e.create(e.KeyA, api.CreateSandboxRequest{})
				e.create(e.KeyB, api.CreateSandboxRequest{})
			},
			req:     api.CreateSandboxRequest{Size: api.SizeLarge},
			code:    api.CodeGlobalCapacityReached,
			details: map[string]any{"limit": 2.0, "active": 2.0},
		},
		{
			name:    "account concurrency before monthly hours",
			cfg:     server.Config{Limits: server.Limits{AccountConcurrent: 1, MonthlySandboxHours: 0.5}},
			setup:   func(e *env) { e.create(e.KeyA, api.CreateSandboxRequest{}); e.clock.Advance(time.Hour) },
			code:    api.CodeConcurrentSandboxLimit,
			details: map[string]any{"limit": 1.0, "active": 1.0, "requested": 1.0},
		},
		{
			name: "a batch that does not fit",
			cfg:  server.Config{Limits: server.Limits{AccountConcurrent: 3}},
			setup: func(e *env) {
				e.create(e.KeyA, api.CreateSandboxRequest{})
				e.create(e.KeyA, api.CreateSandboxRequest{})
			},
			req:     api.CreateSandboxRequest{Count: 2},
			code:    api.CodeConcurrentSandboxLimit,
			details: map[string]any{"limit": 3.0, "active": 2.0, "requested": 2.0},
		},
		{
			name: "monthly hours before size",
			cfg:  server.Config{Limits: server.Limits{MonthlySandboxHours: 2, MaxSize: api.SizeSmall}},
			setup: func(e *env) {
				sb := e.create(e.KeyA, api.CreateSandboxRequest{})
				e.clock.Advance(2*time.Hour + 30*time.Minute)
				e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
				e.clock.Advance(time.Hour) // a destroyed sandbox stops counting
			},
			req:     api.CreateSandboxRequest{Size: api.SizeMedium},
			code:    api.CodeMonthlyUsageLimit,
			details: map[string]any{"limit_hours": 2.0, "used_hours": 2.5},
		},
		{
			name:    "size before storage",
			cfg:     server.Config{MaxStorageGB: 5, Limits: server.Limits{MaxSize: api.SizeMedium}},
			req:     api.CreateSandboxRequest{Size: api.SizeLarge, StorageGB: 6},
			code:    api.CodeSandboxSizeLimitReached,
			details: map[string]any{"requested_size": "large", "max_size": "medium"},
		},
		{
			name:    "storage",
			cfg:     server.Config{MaxStorageGB: 5},
			req:     api.CreateSandboxRequest{StorageGB: 5.5},
			code:    api.CodeSandboxStorageLimitReached,
			details: map[string]any{"requested_storage_gb": 5.5, "max_storage_gb": 5.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.cfg)
			setClock(e.clock, time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC))
			if tt.setup != nil {
				tt.setup(e)
			}
			before := len(e.Driver.Created())
			resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, tt.req)
			ae := wantError(t, resp, body, http.StatusTooManyRequests, tt.code)
			if diff := cmp.Diff(tt.details, ae.Details); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			if ae.Hint == "" {
				t.Errorf("no hint: %s", body)
			}
			if n := len(e.Driver.Created()); n != before {
				t.Errorf("a refused create reached the driver (%d calls)", n-before)
			}
			if rows, _ := e.Store.SandboxesWithStatus(context.Background(), model.StatusCreating); len(rows) != 0 {
				t.Errorf("a refused create left %d rows", len(rows))
			}
		})
	}
}

// TestLimitsAllowUpToTheLimit: the limits are "at most", not "fewer than".
func TestLimitsAllowUpToTheLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{MaxStorageGB: 5, Limits: server.Limits{AccountConcurrent: 2, MaxSize: api.SizeMedium}})
	e.create(e.KeyA, api.CreateSandboxRequest{Size: api.SizeMedium, StorageGB: 5})
	e.create(e.KeyA, api.CreateSandboxRequest{})
	// Deleting one frees its slot.
	sbs, _ := e.Store.ListSandboxes(context.Background(), e.AcctA.ID, true)
	if resp, body := e.do("DELETE", sandboxPath(sbs[0].ID), e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	e.create(e.KeyA, api.CreateSandboxRequest{})
}

// TestConcurrentCreatesRespectLimits: 50 creates at once against a limit
// of 5 never have more than 5 sandboxes being created or active, for the
// per-account and for the global limit.
func TestConcurrentCreatesRespectLimits(t *testing.T) {
	t.Parallel()
	const limit, attempts = 5, 50
	for _, tt := range []struct {
		name   string
		limits server.Limits
		code   string
	}{
		{"per account", server.Limits{AccountConcurrent: limit}, api.CodeConcurrentSandboxLimit},
		{"global", server.Limits{GlobalConcurrent: limit}, api.CodeGlobalCapacityReached},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, server.Config{Limits: tt.limits, RateLimits: server.RateLimits{Lifecycle: -1}})
			_, keyC := e.addAccount("c@example.com", model.RoleAdmin)
			var peak atomic.Int64
			countPeak(e, &peak, func(u model.Usage) int { return u.GlobalActive })
			createAtOnce(t, attempts, limit, tt.code, &peak, func(i int) (*env, string) {
				if tt.limits.GlobalConcurrent > 0 && i%2 == 1 {
					return e, keyC // the global limit holds across accounts
				}
				return e, e.KeyA
			})
			active, err := e.Store.SandboxesWithStatus(context.Background(), api.StatusActive)
			if err != nil {
				t.Fatal(err)
			}
			if len(active) != limit {
				t.Errorf("%d active sandboxes, want %d", len(active), limit)
			}
		})
	}
}

// countPeak has e's fake driver record in peak the most sandboxes that
// held a slot (held, of the account's usage) while one of its creates was
// in flight; each create takes 10 ms, so that they overlap.
func countPeak(e *env, peak *atomic.Int64, held func(model.Usage) int) {
	e.Driver.CreateFunc = func(ctx context.Context, _ model.Spec) (model.Endpoint, error) {
		u, err := e.Store.Usage(ctx, e.AcctA.ID, time.Time{}, time.Now())
		if err != nil {
			return model.Endpoint{}, err
		}
		n := int64(held(u))
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		return e.Sidecar.Endpoint(), nil
	}
}

// createAtOnce makes attempts sandbox creates at once, the i-th on the
// env and with the key at(i) names, and fails t unless limit of them were
// created and the others refused with code, and peak (countPeak's) never
// passed limit.
func createAtOnce(t *testing.T, attempts, limit int, code string, peak *atomic.Int64, at func(i int) (*env, string)) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make(chan string, attempts)
	for i := range attempts {
		e, key := at(i)
		wg.Go(func() {
			resp, body := e.do("POST", "/v1/sandboxes", key, api.CreateSandboxRequest{})
			if resp.StatusCode == http.StatusCreated {
				codes <- "created"
				return
			}
			codes <- apiError(t, body).Code
		})
	}
	wg.Wait()
	close(codes)
	got := map[string]int{}
	for c := range codes {
		got[c]++
	}
	if diff := cmp.Diff(map[string]int{"created": limit, code: attempts - limit}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if p := peak.Load(); p > int64(limit) {
		t.Errorf("%d sandboxes held slots at once, limit %d", p, limit)
	}
}

func TestLimitsConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  server.Config
	}{
		{"negative concurrency", server.Config{Limits: server.Limits{AccountConcurrent: -1}}},
		{"negative global", server.Config{Limits: server.Limits{GlobalConcurrent: -1}}},
		{"negative hours", server.Config{Limits: server.Limits{MonthlySandboxHours: -1}}},
		{"unknown size", server.Config{Limits: server.Limits{MaxSize: "huge"}}},
		{"short jwt secret", server.Config{JWTSecret: "short"}},
		{"short token lifetime", server.Config{AccessTokenTTL: time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := server.New(tt.cfg, openStore(t, t.TempDir()), &fakeDriver{}, nil); err == nil {
				t.Errorf("server.New(%+v) succeeded, want a config error", tt.cfg)
			}
		})
	}
}
