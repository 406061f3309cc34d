package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// BenchmarkListSandboxPage is GET /v1/sandboxes?limit=31 (session ls on a
// terminal) on Postgres for an account with 10,000 past sandboxes and 3
// live ones, right after they were inserted (the planner's statistics
// stale: autovacuum has not analyzed the table yet) and after ANALYZE,
// for the first page and the page after the 5,000th row.
// session19-paging19.md measured the first page at 13–19 ms stale and
// 0.2 ms analyzed, the page after row 5,000 at 3–7 ms.
func BenchmarkListSandboxPage(b *testing.B) {
	dsn := servertest.PostgresDSN(b)
	if dsn == "" {
		b.Skip(servertest.PostgresEnv + " is not set")
	}
	st, err := sqlstore.Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(b.Context(), `ALTER TABLE sandboxes SET (autovacuum_enabled = false)`); err != nil {
		b.Fatal(err) // the stale case must stay stale while it runs
	}
	a := &model.Account{ID: model.NewID(), Email: "pages@example.com", CreatedAt: base}
	if err := st.CreateAccount(b.Context(), a); err != nil {
		b.Fatal(err)
	}
	for i := range 10_003 {
		sb := newSandbox(a, base.Add(time.Duration(i)*time.Second))
		if i < 10_000 {
			at := sb.CreatedAt.Add(time.Minute)
			sb.Status, sb.DestroyReason, sb.DestroyedAt = api.StatusDestroyed, model.ReasonDeleted, &at
		}
		if err := st.CreateSandbox(b.Context(), sb); err != nil {
			b.Fatal(err)
		}
	}
	// The first page, and the page after the 5,000th row (a cursor).
	cursor := base.Add(5002 * time.Second)
	pages := map[string]model.SandboxPage{
		"first":     {Limit: 31},
		"after5000": {Limit: 31, AfterCreated: cursor, AfterID: "~"},
	}
	run := func(b *testing.B) {
		for _, name := range []string{"first", "after5000"} {
			p := pages[name]
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					rows, err := st.ListSandboxPage(b.Context(), a.ID, p)
					if err != nil || len(rows) != 31 {
						b.Fatalf("page: %d rows, %v", len(rows), err)
					}
				}
			})
		}
	}
	b.Run("stale", run)
	if _, err := db.ExecContext(b.Context(), `ANALYZE sandboxes`); err != nil {
		b.Fatal(err)
	}
	b.Run("analyzed", run)
}
