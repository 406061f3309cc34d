package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// statsDriver is a fakeDriver that also reports usage.
type statsDriver struct {
	*fakeDriver
	stats func(id string) (model.Stats, error)
}

func (d statsDriver) Stats(_ context.Context, id string) (model.Stats, error) { return d.stats(id) }

// newStatsEnv is newEnv with a driver that implements StatsDriver.
func newStatsEnv(t *testing.T, stats func(id string) (model.Stats, error)) *env {
	t.Helper()
	st := openStore(t, t.TempDir())
	e := &env{t: t, Store: st, Sidecar: newFakeSidecar(t), Logs: &lockedbuf.Buffer{}, clock: &clock{now: time.Now().UTC()}}
	e.Driver = &fakeDriver{CreateFunc: func(context.Context, model.Spec) (model.Endpoint, error) {
		return e.Sidecar.Endpoint(), nil
	}}
	srv, err := server.New(server.Config{DriverName: "fake"}, st, statsDriver{e.Driver, stats},
		slog.New(slog.NewTextHandler(e.Logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e.Server = srv
	e.AcctA, e.KeyA = e.addAccount("a@example.com", model.RoleAdmin)
	_, e.KeyB = e.addAccount("b@example.com", model.RoleAdmin)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.URL = hs.URL
	return e
}

func TestSandboxStats(t *testing.T) {
	t.Parallel()
	e := newStatsEnv(t, func(id string) (model.Stats, error) {
		if id == "" {
			return model.Stats{}, errors.New("no id")
		}
		return model.Stats{MemoryBytes: 9 << 20, MemoryAnonBytes: 4 << 20, Pids: 2}, nil
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	resp, body := e.do("GET", sandboxPath(sb.ID, "/stats"), e.KeyA, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stats: %d %s", resp.StatusCode, body)
	}
	var got api.SandboxStats
	mustUnmarshal(t, body, &got)
	if diff := cmp.Diff(api.SandboxStats{MemoryBytes: 9 << 20, MemoryAnonBytes: 4 << 20, Pids: 2}, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	resp, body = e.do("GET", sandboxPath(sb.ID, "/stats"), e.KeyB, nil)
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)

	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", sandboxPath(sb.ID, "/stats"), e.KeyA, nil)
	wantError(t, resp, body, http.StatusConflict, api.CodeConflict)
}

func TestSandboxStatsUnsupported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    func(t *testing.T) *env
	}{
		{"driver without stats", func(t *testing.T) *env { return newEnv(t, server.Config{}) }},
		{"driver without accounting", func(t *testing.T) *env {
			return newStatsEnv(t, func(string) (model.Stats, error) {
				return model.Stats{}, fmt.Errorf("sandbox stats: %w", model.ErrNoStats)
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := tt.e(t)
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			resp, body := e.do("GET", sandboxPath(sb.ID, "/stats"), e.KeyA, nil)
			wantError(t, resp, body, http.StatusNotImplemented, api.CodeNotSupported)
		})
	}
}
