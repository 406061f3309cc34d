package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

func TestReaper(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	short := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 5})
	long := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 60})

	e.clock.Advance(5*time.Minute - time.Second)
	e.Server.Reap(context.Background())
	if len(e.Driver.Deleted()) != 0 {
		t.Fatalf("reaper deleted %v before anything expired", e.Driver.Deleted())
	}
	e.clock.Advance(time.Second)
	e.Server.Reap(context.Background())
	if got := e.Driver.Deleted(); len(got) != 1 || got[0] != short.ID {
		t.Fatalf("reaper deleted %v, want only %s", got, short.ID)
	}
	_, body := e.do("GET", sandboxPath(short.ID), e.KeyA, nil)
	var got api.Sandbox
	mustUnmarshal(t, body, &got)
	if got.Status != api.StatusDestroyed || got.DestroyReason != model.ReasonExpired || got.DestroyedAt == nil {
		t.Errorf("expired sandbox = %+v, want destroyed/expired", got)
	}
	_, body = e.do("GET", sandboxPath(long.ID), e.KeyA, nil)
	mustUnmarshal(t, body, &got)
	if got.Status != api.StatusActive {
		t.Errorf("unexpired sandbox = %+v, want active", got)
	}

	// A driver failure leaves the sandbox active for the next pass.
	e.clock.Advance(time.Hour)
	e.Driver.DeleteFunc = func(context.Context, string) error { return errors.New("busy") }
	e.Server.Reap(context.Background())
	if sb, _ := e.Store.Sandbox(context.Background(), e.AcctA.ID, long.ID); sb.Status != api.StatusActive {
		t.Errorf("after a failed teardown status = %s, want active (to retry)", sb.Status)
	}
	e.Driver.DeleteFunc = nil
	e.Server.Reap(context.Background())
	if sb, _ := e.Store.Sandbox(context.Background(), e.AcctA.ID, long.ID); sb.Status != api.StatusDestroyed {
		t.Errorf("after the retry status = %s, want destroyed", sb.Status)
	}
}

// TestFailedDeleteRetried: a delete whose teardown the driver failed
// answers 5xx; calls to the sandbox are refused as to one being
// destroyed, and the reaper's next tick retries the teardown and records
// it destroyed (deleted), with no second DELETE. Before, the sandbox
// stayed active until the client retried.
func TestFailedDeleteRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Driver.DeleteFunc = func(context.Context, string) error { return errors.New("busy") }
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode < 500 {
		t.Fatalf("delete the driver failed = %d %s, want 5xx", resp.StatusCode, body)
	}
	if resp, body := e.do("POST", sandboxPath(sb.ID)+"/exec", e.KeyA, api.ExecRequest{Command: "true"}); resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "being destroyed") {
		t.Errorf("exec in a sandbox being destroyed = %d %s, want 409 being destroyed", resp.StatusCode, body)
	}
	e.Driver.DeleteFunc = nil
	e.Server.FinishRemovals(context.Background())
	got, err := e.Store.Sandbox(context.Background(), e.AcctA.ID, sb.ID)
	if err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != model.ReasonDeleted {
		t.Fatalf("after the tick = %+v, %v; want destroyed (deleted)", got, err)
	}
	if n := len(e.Driver.Deleted()); n != 2 {
		t.Errorf("driver deletes = %d, want 2 (the failed one and the retry)", n)
	}
}

// TestRunReaps drives the real Run loop with a short interval.
func TestRunReaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{ReaperInterval: 10 * time.Millisecond})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{LifetimeMinutes: 1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Server.Run(ctx) }()
	e.clock.Advance(time.Minute)
	eventually(t, "the reaper to destroy the sandbox", func() bool {
		got, err := e.Store.Sandbox(context.Background(), e.AcctA.ID, sb.ID)
		return err == nil && got.Status == api.StatusDestroyed
	})
	// Run also records key use, off the request path.
	eventually(t, "last_used_at to be recorded", func() bool {
		k, _, err := e.Store.APIKeyByHash(context.Background(), model.HashAPIKey(e.KeyA))
		return err == nil && k.LastUsedAt != nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// TestReconcile restarts the control plane on a store holding one
// sandbox whose sidecar still answers, one whose sidecar is gone, one
// interrupted mid-create, and a driver that also reports an orphan.
func TestReconcile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, dir)
	e := newEnvWithStore(t, server.Config{}, st)
	alive := e.create(e.KeyA, api.CreateSandboxRequest{})
	dead := e.create(e.KeyA, api.CreateSandboxRequest{})
	// Point "dead" at a socket nobody listens on.
	ctx := context.Background()
	if _, err := st.UpdateSandbox(ctx, dead.ID, func(sb *model.Sandbox) error {
		sb.Endpoint = model.Endpoint{Network: "unix", Address: filepath.Join(dir, "gone.sock"), Token: "t"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// And one at an address that accepts but never answers, to prove the
	// health sweep is bounded.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	hung := e.create(e.KeyA, api.CreateSandboxRequest{})
	if _, err := st.UpdateSandbox(ctx, hung.ID, func(sb *model.Sandbox) error {
		sb.Endpoint = model.Endpoint{Network: "tcp", Address: hang.Addr().String(), Token: "t"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	creating := &model.Sandbox{
		ID: model.NewID(), AccountID: e.AcctA.ID, Size: api.SizeSmall, LifetimeMinutes: 30,
		Status: model.StatusCreating, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), Driver: "fake",
	}
	if err := st.CreateSandbox(ctx, creating); err != nil {
		t.Fatal(err)
	}
	orphan := model.NewID()

	// "Restart": a new server and driver on the same store.
	driver := &fakeDriver{ListFunc: func(context.Context) ([]model.Observed, error) {
		return []model.Observed{{ID: alive.ID, Alive: true}, {ID: dead.ID}, {ID: orphan, Alive: true}}, nil
	}}
	srv, err := server.New(server.Config{}, st, driver, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The sweep is bounded: Init returns although "hung" never answers.
	// The bound is long enough for the live sidecar to answer on a loaded
	// machine (a 300 ms bound marked it lost under load), and Init must
	// return well before the hang guard.
	srv.SetHealthTimeout(5 * time.Second)
	inited := make(chan error, 1)
	go func() { inited <- srv.Init(ctx) }()
	select {
	case err := <-inited:
		if err != nil {
			t.Fatalf("Init: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Init did not return: the health sweep waits on a sidecar that never answers")
	}

	status := func(id string) (string, string) {
		sb, err := st.Sandbox(ctx, e.AcctA.ID, id)
		if err != nil {
			return "error: " + err.Error(), ""
		}
		return sb.Status, sb.DestroyReason
	}
	for _, tt := range []struct {
		id, status, reason string
	}{
		{alive.ID, api.StatusActive, ""},
		{dead.ID, api.StatusLost, model.ReasonLost},
		{hung.ID, api.StatusLost, model.ReasonLost},
		{creating.ID, "error: " + model.ErrNotFound.Error(), ""},
	} {
		if s, r := status(tt.id); s != tt.status || r != tt.reason {
			t.Errorf("sandbox %s: status %q reason %q, want %q %q", tt.id, s, r, tt.status, tt.reason)
		}
	}
	deleted := driver.Deleted()
	for _, id := range []string{dead.ID, hung.ID, creating.ID, orphan} {
		if !contains(deleted, id) {
			t.Errorf("driver.Delete(%s) not called; deleted %v", id, deleted)
		}
	}
	if contains(deleted, alive.ID) {
		t.Errorf("the live sandbox %s was deleted", alive.ID)
	}

	// The adopted sandbox still works through the restarted server.
	hs := httptestServer(t, srv)
	req, _ := http.NewRequest("POST", hs+sandboxPath(alive.ID, "/exec"), strings.NewReader(`{"command":"still here"}`))
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "still here") {
		t.Errorf("exec on the adopted sandbox = %d %s", resp.StatusCode, b)
	}
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	key := model.NewAPIKey()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(cfg server.Config) error {
		srv, err := server.New(cfg, st, &fakeDriver{}, logger)
		if err != nil {
			return err
		}
		return srv.Init(context.Background())
	}
	for i := range 2 { // the second start must be a no-op
		if err := start(server.Config{BootstrapAPIKey: key}); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	k, acct, err := st.APIKeyByHash(context.Background(), model.HashAPIKey(key))
	if err != nil {
		t.Fatalf("bootstrap key not registered: %v", err)
	}
	if acct.Email != server.DefaultBootstrapEmail || k.Role != model.RoleAdmin || !strings.HasPrefix(key, k.Prefix) {
		t.Errorf("bootstrap key %+v of %+v", k, acct)
	}

	if err := start(server.Config{BootstrapAPIKey: "bxk_live_short"}); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("malformed bootstrap key: err = %v", err)
	}
	if err := st.RevokeAPIKey(context.Background(), acct.ID, k.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := start(server.Config{BootstrapAPIKey: key}); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked bootstrap key: err = %v, want a refusal", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	st := openStore(t, t.TempDir())
	for _, cfg := range []server.Config{
		{DefaultLifetime: 2 * time.Hour, MaxLifetime: time.Hour},
		{MaxLifetime: time.Second},
		{MaxCount: -1},
	} {
		if _, err := server.New(cfg, st, &fakeDriver{}, nil); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", cfg)
		}
	}
}
