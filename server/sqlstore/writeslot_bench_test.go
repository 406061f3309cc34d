package sqlstore

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// BenchmarkConcurrentCreates is the store's part of 100 creates at once
// (issue 27 item 3): 100 writers (50 per CPU on the 2-CPU host), each
// recording a sandbox (a lone INSERT) and then its endpoint (a read-then-
// write transaction), as the create service does. It reports the writes
// that failed (SQLITE_BUSY), the 95th percentile and the slowest of one
// create's two writes (a write that waits 10 s for SQLite's lock fails),
// and the connections the pool opened per create.
func BenchmarkConcurrentCreates(b *testing.B) {
	benchConcurrentCreates(b, func(ctx context.Context, s *Store, sb *model.Sandbox) error {
		return s.CreateSandbox(ctx, sb)
	})
}

// BenchmarkConcurrentPlainCreates is the store's part of 100 cold creates
// at once as the create service makes them (sandbox.startPlain and
// startCold): the limits read first (Usage, outside any transaction), then
// the reservation (Usage again and the INSERT, in one transaction), then
// the row made active. All 100 creates arrive together, so their first
// reads run side by side: it reports the connections the pool opened per
// create (each one opens SQLite's file handle and parses the schema), the
// 95th percentile and the slowest of a create's three store calls, and the
// failures.
func BenchmarkConcurrentPlainCreates(b *testing.B) {
	allow := func(model.Usage) error { return nil }
	benchConcurrentCreates(b, func(ctx context.Context, s *Store, sb *model.Sandbox) error {
		month := time.Date(sb.CreatedAt.Year(), sb.CreatedAt.Month(), 1, 0, 0, 0, 0, time.UTC)
		if _, err := s.Usage(ctx, sb.AccountID, month, sb.CreatedAt); err != nil {
			return err
		}
		return s.ReserveSandboxes(ctx, sb.AccountID, month, sb.CreatedAt, allow, []*model.Sandbox{sb})
	})
}

// benchConcurrentCreates runs 100 creates at once (50 per CPU on the 2-CPU
// host) against a fresh SQLite store: record makes a sandbox's row as the
// create service would, then the row is made active with its endpoint. It
// reports the failed creates, the connections the pool opened per create,
// and the 95th percentile and slowest of a create's store calls.
func benchConcurrentCreates(b *testing.B, record func(context.Context, *Store, *model.Sandbox) error) {
	s, err := Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	a := &model.Account{ID: model.NewID(), Email: "bench@example.com", CreatedAt: time.Now()}
	if err := s.CreateAccount(b.Context(), a); err != nil {
		b.Fatal(err)
	}
	var (
		failed atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
	)
	b.SetParallelism(50)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			now := start.UTC()
			sb := &model.Sandbox{
				ID: model.NewID(), AccountID: a.ID, Label: "bench", Size: api.SizeSmall, StorageGB: 1,
				LifetimeMinutes: 30, Status: model.StatusCreating, CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
				Driver: "local",
			}
			if err := record(b.Context(), s, sb); err != nil {
				failed.Add(1)
				continue
			}
			_, err := s.UpdateSandbox(b.Context(), sb.ID, func(sb *model.Sandbox) error {
				sb.Status = api.StatusActive
				sb.Endpoint = model.Endpoint{Network: "unix", Address: "/run/x.sock", Token: "tok"}
				return nil
			})
			if err != nil {
				failed.Add(1)
				continue
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	st := s.db.Stats()
	opened := st.OpenConnections + int(st.MaxIdleClosed+st.MaxIdleTimeClosed+st.MaxLifetimeClosed)
	b.ReportMetric(float64(failed.Load()), "failed")
	b.ReportMetric(float64(opened)/float64(b.N), "conns/op")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	}
}
