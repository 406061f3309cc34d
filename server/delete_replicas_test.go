package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestDeleteFinishedByStartingReplica: with two servers on one Postgres
// database, a server that starts while the other deletes a sandbox
// finishes that removal itself (its intent is in the row); the deleting
// server's DELETE still answers 204, not 404 "already destroyed"
// (session19-intent19.md, "Found, not fixed" 1). A DELETE after that is
// a second delete and answers 404, as the reference's does.
//
// The starting server's removal waits for the lifecycle lease the
// deleting server holds while it waits for that start: the test moves
// the servers' clock past the lease when the wait begins, as a minute of
// real time would (the removal's wait, CleanupTimeout, took 61 s).
func TestDeleteFinishedByStartingReplica(t *testing.T) {
	var (
		fired   atomic.Bool
		moved   atomic.Bool
		starter atomic.Pointer[server.Server]
		clk     atomic.Pointer[clock]
		initErr = make(chan error, 1)
	)
	cfg := server.Config{
		AfterTeardownForTests: func(string) {
			// The first teardown (the DELETE's, on the first server): the
			// second server starts at this instant, before the row is
			// written.
			if srv := starter.Load(); srv != nil && fired.CompareAndSwap(false, true) {
				initErr <- srv.Init(context.Background())
			}
		},
		LockWaitForTests: func(string) {
			// The starting server waits for the deleting one's lease:
			// it runs out (leaseTTL, 30 s, by the servers' clock).
			if fired.Load() && moved.CompareAndSwap(false, true) {
				clk.Load().Advance(31 * time.Second)
			}
		},
	}
	rs, _ := newReplicas(t, 2, cfg)
	a, b := rs[0], rs[1]
	clk.Store(a.clock)
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	starter.Store(b.Server)

	resp, body := a.do("DELETE", "/v1/sandboxes/"+sb.ID, a.KeyA, nil)
	if !fired.Load() {
		t.Fatal("the second server did not start during the delete")
	}
	if err := <-initErr; err != nil {
		t.Fatalf("the second server's start: %v", err)
	}
	if !moved.Load() {
		t.Error("the second server's start did not wait for the deleting server's lease")
	}
	if logs := b.Logs.String(); !strings.Contains(logs, "removal under way finished") {
		t.Errorf("the second server did not finish the removal; its log:\n%s", logs)
	}
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE while another server finished it = %d %s, want 204", resp.StatusCode, body)
	}
	got, err := a.Store.SandboxByID(context.Background(), sb.ID)
	if err != nil || got.Status != api.StatusDestroyed || got.DestroyReason != "deleted" {
		t.Fatalf("after the delete: %+v, %v; want destroyed (deleted)", got, err)
	}

	// A second delete, on either server, is the reference's 404.
	for name, e := range map[string]*env{"first": a, "second": b} {
		resp, body := e.do("DELETE", "/v1/sandboxes/"+sb.ID, e.KeyA, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("second DELETE on the %s server = %d %s, want 404", name, resp.StatusCode, body)
		}
	}
}
