package server_test

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/lockedbuf"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// newReplicas starts n servers on one fresh Postgres database, each with
// its own store connection pool and background work (Run, which carries
// the LISTEN connection), all with the same fake sidecar. The first one's
// env has the two accounts; the others share them through the database.
func newReplicas(t testing.TB, n int, cfg server.Config) ([]*env, string) {
	return newReplicasWith(t, n, cfg, nil)
}

// newReplicasWith is newReplicas with each server's driver wrap(its
// fake driver) (nil: the fake driver).
func newReplicasWith(t testing.TB, n int, cfg server.Config, wrap func(*fakeDriver) model.Driver) ([]*env, string) {
	t.Helper()
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
	}
	var out []*env
	for i := range n {
		var e *env
		if i == 0 {
			e = newEnvWithDriver(t, cfg, openReplicaStore(t, dsn), wrap)
			startReplica(t, e)
		} else {
			e, _ = addReplica(t, out[0], dsn, cfg, wrap)
		}
		out = append(out, e)
	}
	return out, dsn
}

// openReplicaStore opens a store of its own on dsn, closed when t ends.
func openReplicaStore(t testing.TB, dsn string) model.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// addReplica starts one more server on dsn, sharing first's accounts,
// sidecar and clock, with its driver wrap(its fake driver) (nil: the
// fake driver), as startReplica does; it returns the server and its
// stop.
func addReplica(t testing.TB, first *env, dsn string, cfg server.Config, wrap func(*fakeDriver) model.Driver) (*env, func()) {
	t.Helper()
	st := openReplicaStore(t, dsn)
	e := &env{
		t: t, Store: st, Sidecar: first.Sidecar, Logs: &lockedbuf.Buffer{}, clock: first.clock,
		KeyA: first.KeyA, KeyB: first.KeyB, AcctA: first.AcctA,
	}
	e.Driver = &fakeDriver{CreateFunc: func(context.Context, model.Spec) (model.Endpoint, error) {
		return e.Sidecar.Endpoint(), nil
	}}
	var d model.Driver = e.Driver
	if wrap != nil {
		d = wrap(e.Driver)
	}
	c := cfg
	c.DriverName = "fake"
	srv, err := server.New(c, st, d, slog.New(slog.NewTextHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetNow(e.clock.Now)
	e.Server = srv
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.URL = hs.URL
	return e, startReplica(t, e)
}

// startReplica starts e's server as boxkite-server does: Init (its
// heartbeat, the reconciliation of a start), then Run until the test
// ends or the returned stop is called (its heartbeat then stops too, as
// a crashed server's: Run does not remove it, Serve does).
func startReplica(t testing.TB, e *env) func() {
	t.Helper()
	if err := e.Server.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Server.Run(ctx)
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// TestReplicasShareWatch: a watcher on one server sees, within a second,
// what is done through another server on the same Postgres database
// (LISTEN/NOTIFY), in chain order and once.
func TestReplicasShareWatch(t *testing.T) {
	rs, dsn := newReplicas(t, 2, server.Config{})
	a, b := rs[0], rs[1]
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	wa := openWatch(t, a.URL, sb.ID, a.KeyA, "")
	wb := openWatch(t, b.URL, sb.ID, b.KeyA, "")

	for i, via := range []*env{b, a, b} {
		start := time.Now()
		via.exec(via.KeyA, sb.ID, "echo replica")
		for name, w := range map[string]*watchStream{"A": wa, "B": wb} {
			got, ev := w.next(t, time.Second)
			if got.Operation != "exec" {
				t.Errorf("round %d: watcher on %s got %+v, want the exec", i, name, got)
			}
			if lag := ev.at.Sub(start); lag > time.Second {
				t.Errorf("round %d: watcher on %s took %v", i, name, lag)
			}
		}
	}
	// Listening connections that break are replaced, and what was written
	// meanwhile still reaches the watchers.
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var killed int
	if err := db.QueryRowContext(context.Background(),
		`SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		 WHERE datname = current_database() AND query LIKE 'LISTEN boxkite_audit%'`).Scan(&killed); err != nil || killed != 2 {
		t.Fatalf("terminate the listeners: %d, %v; want 2", killed, err)
	}
	b.exec(b.KeyA, sb.ID, "echo after the listeners broke")
	for name, w := range map[string]*watchStream{"A": wa, "B": wb} {
		if got, _ := w.next(t, 5*time.Second); got.Operation != "exec" {
			t.Errorf("after reconnecting, watcher on %s got %+v", name, got)
		}
	}

	// Each watcher has the whole chain once, in order, whichever server wrote it.
	want := logIDs(t, a.Store, sb.ID)
	for _, w := range []*watchStream{wa, wb} {
		w.quiet(t, 200*time.Millisecond)
	}
	wc := openWatch(t, b.URL, sb.ID, b.KeyA, "")
	if diff := cmp.Diff(want, wc.nextIDs(t, len(want))); diff != "" {
		t.Errorf("replay on the second server (-log +events):\n%s", diff)
	}
}

// TestReplicasShareQuota: 50 creates spread over two servers on one
// Postgres database, against a concurrency limit of 5, create exactly 5
// (the reservation's advisory lock spans servers).
func TestReplicasShareQuota(t *testing.T) {
	const limit, attempts = 5, 50
	rs, _ := newReplicas(t, 2, server.Config{
		Limits:     server.Limits{AccountConcurrent: limit},
		RateLimits: server.RateLimits{Lifecycle: -1},
	})
	var peak atomic.Int64
	for _, e := range rs {
		countPeak(e, &peak, func(u model.Usage) int { return u.AccountActive })
	}
	createAtOnce(t, attempts, limit, api.CodeConcurrentSandboxLimit, &peak, func(i int) (*env, string) {
		e := rs[i%2]
		return e, e.KeyA
	})
}

// BenchmarkWatchLatencyReplicas is BenchmarkWatchLatency across two
// servers on Postgres: the entry is written by one, and the event read
// from the other's watch stream (through LISTEN/NOTIFY).
func BenchmarkWatchLatencyReplicas(b *testing.B) {
	rs, _ := newReplicas(b, 2, server.Config{})
	sb := rs[0].create(rs[0].KeyA, api.CreateSandboxRequest{})
	ws := openWatch(b, rs[0].URL, sb.ID, rs[0].KeyA, "")
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := rs[1].Server.AppendAudit(ctx, sb.ID, rs[0].AcctA.ID, "exec"); err != nil {
			b.Fatal(err)
		}
		_, ev := ws.next(b, 10*time.Second)
		lat = append(lat, ev.at.Sub(start))
	}
	reportPercentiles(b, lat)
}
