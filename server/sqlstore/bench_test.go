package sqlstore_test

import (
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// benchStore opens a fresh SQLite store with one account and one sandbox
// holding 100 audit entries, as a sandbox in use would.
func benchStore(b *testing.B) (*sqlstore.Store, *model.Sandbox) {
	b.Helper()
	st, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a := &model.Account{ID: model.NewID(), Email: "bench@example.com", CreatedAt: base}
	if err := st.CreateAccount(b.Context(), a); err != nil {
		b.Fatal(err)
	}
	sb := newSandbox(a, base)
	if err := st.CreateSandbox(b.Context(), sb); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if err := st.AppendExecLog(b.Context(), logEntry(sb.ID, a.ID, "exec", i)); err != nil {
			b.Fatal(err)
		}
	}
	return st, sb
}

// goroutinesCreated is the count of goroutines the process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// reportGoroutines reports the goroutines started per op since before:
// each one started (and ended) on an append's path can wake a thread.
func reportGoroutines(b *testing.B, before uint64) {
	b.ReportMetric(float64(goroutinesCreated()-before)/float64(b.N), "goroutines/op")
}

// BenchmarkAppendExecLog is the audit write every exec waits for.
func BenchmarkAppendExecLog(b *testing.B) {
	st, sb := benchStore(b)
	i := 100
	before := goroutinesCreated()
	for b.Loop() {
		if err := st.AppendExecLog(b.Context(), logEntry(sb.ID, sb.AccountID, "exec", i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportGoroutines(b, before)
}

// BenchmarkAppendExecLogPaced is the audit write of a lone exec: appends
// 5 ms apart, as one client's execs arrive, instead of back to back. A
// commit then never shares the file system's timestamp tick with the one
// before (back to back, most do), which is what a commit costs when the
// sync also has to carry a new mtime. It reports each append's p50 and
// p90 besides the loop's time, which includes the pauses.
func BenchmarkAppendExecLogPaced(b *testing.B) {
	st, sb := benchStore(b)
	var took []time.Duration
	i := 100
	before := goroutinesCreated()
	for b.Loop() {
		time.Sleep(5 * time.Millisecond)
		start := time.Now()
		if err := st.AppendExecLog(b.Context(), logEntry(sb.ID, sb.AccountID, "exec", i)); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	reportGoroutines(b, before)
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs/append")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds()), "p90-µs/append")
}

// BenchmarkSandbox is the lookup every sandbox route starts with.
func BenchmarkSandbox(b *testing.B) {
	st, sb := benchStore(b)
	for b.Loop() {
		if _, err := st.Sandbox(b.Context(), sb.AccountID, sb.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendExecLogParallel is the audit write of execs arriving
// together: 16 writers per CPU, each on its own sandbox, as execs on many
// sandboxes (or several on one) are answered at once.
func BenchmarkAppendExecLogParallel(b *testing.B) {
	st, sb := benchStore(b)
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		sandbox := fmt.Sprintf("%s-%d", sb.ID, n.Add(1))
		i := 0
		for pb.Next() {
			if err := st.AppendExecLog(b.Context(), logEntry(sandbox, sb.AccountID, "exec", i)); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkUsageMonth is the usage read every create makes (twice, once
// in the write slot), for an account that created N sandboxes this month,
// all destroyed since: its cost grows with N when the month's hours are
// summed (a monthly limit applies), not when they are not ("nohours": a
// zero since).
func BenchmarkUsageMonth(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, -10000} {
		since, name := base, fmt.Sprint(n)
		if n < 0 {
			n, since, name = -n, time.Time{}, fmt.Sprint(-n)+"-nohours"
		}
		b.Run(name, func(b *testing.B) {
			st, err := sqlstore.Open(b.Context(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			a := &model.Account{ID: model.NewID(), Email: "bench@example.com", CreatedAt: base}
			if err := st.CreateAccount(b.Context(), a); err != nil {
				b.Fatal(err)
			}
			var sbs []*model.Sandbox
			for i := range n {
				sb := newSandbox(a, base.Add(time.Duration(i)*time.Second))
				destroyed := sb.CreatedAt.Add(time.Minute)
				sb.Status, sb.DestroyedAt = api.StatusDestroyed, &destroyed
				sbs = append(sbs, sb)
			}
			for chunk := range slices.Chunk(sbs, 500) { // one commit each
				if err := st.ReserveSandboxes(b.Context(), a.ID, base, base, func(model.Usage) error { return nil }, chunk); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := st.Usage(b.Context(), a.ID, since, base.Add(24*time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdateSandboxDestroying is the write a removal adds before the
// driver's teardown (the intent, server/sandbox/removals.go).
func BenchmarkUpdateSandboxDestroying(b *testing.B) {
	st, sb := benchStore(b)
	reasons := []string{model.ReasonDeleted, model.ReasonExpired}
	i := 0
	for b.Loop() {
		i++
		if _, err := st.UpdateSandbox(b.Context(), sb.ID, func(sb *model.Sandbox) error {
			sb.Destroying = reasons[i%2]
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSandboxLifecycle is the store's part of one cold create and
// its delete, one after another, as the sandbox service makes them (issue
// 27 item 3: at 100 creates at once each create's wall is its share of the
// CPUs): the limits read (Usage), the reservation (Usage and the INSERT in
// one transaction), the row made active with its endpoint, the lookup of
// the delete's request, the destroying intent and the row destroyed. It
// reports the CPU time, the statements SQLite prepared (each one a parse
// of its SQL and a plan) and the bytes the process wrote (the WAL's
// frames) per op, besides the time and allocations.
func BenchmarkSandboxLifecycle(b *testing.B) {
	st, sb := benchStore(b)
	allow := func(model.Usage) error { return nil }
	month := time.Date(base.Year(), base.Month(), 1, 0, 0, 0, 0, time.UTC)
	prepared, cpu, written := st.Prepared(), processCPU(b), writtenBytes()
	for b.Loop() {
		now := time.Now().UTC()
		nb := newSandbox(&model.Account{ID: sb.AccountID}, now)
		nb.Status = model.StatusCreating
		if _, err := st.Usage(b.Context(), sb.AccountID, month, now); err != nil {
			b.Fatal(err)
		}
		if err := st.ReserveSandboxes(b.Context(), sb.AccountID, month, now, allow, []*model.Sandbox{nb}); err != nil {
			b.Fatal(err)
		}
		steps := []func(*model.Sandbox) error{
			func(sb *model.Sandbox) error {
				sb.Status = api.StatusActive
				sb.Endpoint = model.Endpoint{Network: "unix", Address: "/run/x.sock", Token: "tok"}
				return nil
			},
			func(sb *model.Sandbox) error { sb.Destroying = model.ReasonDeleted; return nil },
			func(sb *model.Sandbox) error {
				sb.Status, sb.DestroyReason, sb.Destroying = api.StatusDestroyed, model.ReasonDeleted, ""
				t := time.Now().UTC()
				sb.DestroyedAt = &t
				return nil
			},
		}
		for i, step := range steps {
			if i == 1 {
				if _, err := st.Sandbox(b.Context(), nb.AccountID, nb.ID); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := st.UpdateSandbox(b.Context(), nb.ID, step); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(st.Prepared()-prepared)/float64(b.N), "prepares/op")
	b.ReportMetric(float64(writtenBytes()-written)/1024/float64(b.N), "written-KiB/op")
}
