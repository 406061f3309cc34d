package server_test

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
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
	t.Helper()
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set; .ci/run starts PostgreSQL and sets it")
	}
	var out []*env
	for i := range n {
		st, err := sqlstore.Open(context.Background(), dsn)
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		var e *env
		if i == 0 {
			e = newEnvWithStore(t, cfg, st)
		} else {
			e = &env{
				t: t, Store: st, Sidecar: out[0].Sidecar, Logs: &syncBuffer{}, clock: out[0].clock,
				KeyA: out[0].KeyA, KeyB: out[0].KeyB, AcctA: out[0].AcctA,
			}
			e.Driver = &fakeDriver{CreateFunc: func(context.Context, model.Spec) (model.Endpoint, error) {
				return e.Sidecar.Endpoint(), nil
			}}
			c := cfg
			c.DriverName = "fake"
			srv, err := server.New(c, st, e.Driver, slog.New(slog.NewTextHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if err != nil {
				t.Fatal(err)
			}
			srv.SetNow(e.clock.Now)
			e.Server = srv
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			e.URL = hs.URL
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Server.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })
		out = append(out, e)
	}
	return out, dsn
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
