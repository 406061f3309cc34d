package status

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
	"github.com/google/go-cmp/cmp"
)

type fakeStore struct {
	ping  error
	usage model.Usage
	sbs   []*model.Sandbox
}

func (f *fakeStore) Ping(context.Context) error { return f.ping }

func (f *fakeStore) Usage(context.Context, string, time.Time, time.Time) (model.Usage, error) {
	return f.usage, nil
}

func (f *fakeStore) ListSandboxes(context.Context, string, bool) ([]*model.Sandbox, error) {
	return f.sbs, nil
}

func newService(t *testing.T, st *fakeStore, mod func(*Deps)) *Service {
	t.Helper()
	d := Deps{
		Store: st, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC) },
		Version: "v1", DriverName: "fake",
		AuditOpen:       func() error { return nil },
		AuditState:      func() (time.Time, error) { return time.Time{}, nil },
		Capacity:        func() (model.CapacityDriver, bool) { return nil, false },
		Metrics:         func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") },
		SidecarProtocol: func(string) (int, bool) { return 0, false },
	}
	if mod != nil {
		mod(&d)
	}
	s, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs the route with pattern for a caller with role ("" for none).
func serve(t *testing.T, s *Service, pattern, role string) *httptest.ResponseRecorder {
	t.Helper()
	for _, rt := range s.Routes() {
		if rt.Pattern != pattern {
			continue
		}
		_, path, _ := strings.Cut(pattern, " ")
		r := httptest.NewRequest(http.MethodGet, path, nil)
		ctx := httpx.WithInfo(r.Context(), &httpx.Info{ID: "req"})
		if role != "" {
			c := authz.From(ctx)
			c.Account = &model.Account{ID: "acct"}
			c.Key = &model.APIKey{Role: role}
		}
		r = r.WithContext(ctx)
		w := httptest.NewRecorder()
		if err := rt.Handler(w, r); err != nil {
			httpx.WriteError(slog.New(slog.DiscardHandler), w, r, err)
		}
		return w
	}
	t.Fatalf("no route %s", pattern)
	return nil
}

func TestNewRefusesMissingDeps(t *testing.T) {
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New(Deps{}) = nil error, want a refusal")
	}
}

func TestStatusRoutes(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		role    string
		store   fakeStore
		mod     func(*Deps)
		status  int
		body    string
	}{
		{name: "health", pattern: "GET /health", status: 200, body: `{"status":"healthy","version":"v1"}`},
		{name: "ready", pattern: "GET /health/ready", status: 200, body: `{"status":"ready","version":"v1"}`},
		{name: "ready without database", pattern: "GET /health/ready", store: fakeStore{ping: errors.New("down")}, status: 503},
		{name: "ready while audit closed", pattern: "GET /health/ready", mod: func(d *Deps) {
			d.AuditOpen = func() error { return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "closed") }
		}, status: 503},
		{name: "metrics", pattern: "GET /metrics", status: 200, body: "m 1\n"},
		{name: "host refuses member keys", pattern: "GET /v1/host", role: model.RoleMember, status: 403},
		{name: "host for admin keys", pattern: "GET /v1/host", role: model.RoleAdmin, status: 200, body: `{"driver":"fake","limits":[],"audit":{"writable":true},"sandboxes":[],"sidecar_protocol":` + strconv.Itoa(api.SidecarProtocol) + `,"older_sidecars":[]}`},
		{
			// Only the sidecars that stated an older protocol: not the
			// current one, nor one that stated nothing yet.
			name: "host names older sidecars", pattern: "GET /v1/host", role: model.RoleAdmin,
			store: fakeStore{sbs: []*model.Sandbox{
				{ID: "old", Label: "web", Status: api.StatusActive},
				{ID: "cur", Status: api.StatusActive},
				{ID: "new", Status: api.StatusActive},
			}},
			mod: func(d *Deps) {
				d.SidecarProtocol = func(id string) (int, bool) {
					v, ok := map[string]int{"old": 0, "cur": api.SidecarProtocol}[id]
					return v, ok
				}
			},
			status: 200,
			body: `{"driver":"fake","limits":[],"audit":{"writable":true},"sandboxes":[],"sidecar_protocol":` + strconv.Itoa(api.SidecarProtocol) +
				`,"older_sidecars":[{"id":"old","label":"web","sidecar_protocol":0}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.store
			w := serve(t, newService(t, &st, tt.mod), tt.pattern, tt.role)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.body != "" {
				got := w.Body.String()
				if json.Valid([]byte(tt.body)) {
					var a, b any
					_ = json.Unmarshal([]byte(got), &a)
					_ = json.Unmarshal([]byte(tt.body), &b)
					if d := cmp.Diff(b, a); d != "" {
						t.Fatalf("body (-want +got):\n%s", d)
					}
				} else if got != tt.body {
					t.Fatalf("body %q, want %q", got, tt.body)
				}
			}
		})
	}
}

func TestUsageLimits(t *testing.T) {
	hours, conc := 10.0, 3
	st := &fakeStore{usage: model.Usage{AccountActive: 2, MonthlyHours: 1.2344}}
	for _, limited := range []bool{false, true} {
		s := newService(t, st, func(d *Deps) {
			if limited {
				d.MonthlySandboxHours, d.AccountConcurrent = hours, conc
			}
		})
		var got api.Usage
		if err := json.Unmarshal(serve(t, s, "GET /v1/usage", model.RoleMember).Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := api.Usage{MonthlySandboxHoursUsed: 1.234, ConcurrentSandboxes: 2}
		if limited {
			want.MonthlySandboxHoursLimit, want.ConcurrentSandboxesLimit = &hours, &conc
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("limited=%v (-want +got):\n%s", limited, d)
		}
	}
}
