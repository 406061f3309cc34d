package sqlstore_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// TestPostgresSandboxPageOnStaleStatistics: a page of GET /v1/sandboxes
// on Postgres is read from the index in its order even while the planner's
// statistics know nothing of the account's rows (a bulk insert that
// autovacuum has not analyzed yet). With those statistics Postgres
// estimated the account at a few rows and planned to read all of them and
// sort them (session20-sync20.md: 10,000 rows, 13–19 ms for a page of 31).
// The plan is asserted, not a time: it has no Sort node.
func TestPostgresSandboxPageOnStaleStatistics(t *testing.T) {
	dsn := servertest.PostgresDSN(t)
	if dsn == "" {
		t.Skip(servertest.PostgresEnv + " is not set")
	}
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := &model.Account{ID: model.NewID(), Email: "stale@example.com", CreatedAt: base}
	if err := st.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	// Never analyzed: autovacuum off for the table before the rows go in.
	if _, err := db.ExecContext(ctx, `ALTER TABLE sandboxes SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO sandboxes
		(id, account_id, size, lifetime_minutes, status, created_at, expires_at, driver)
		SELECT 'sb' || lpad(i::text, 6, '0'), $1, 'small', 60,
			CASE WHEN i >= 4997 THEN 'active' ELSE 'destroyed' END,
			1000000 * i::bigint, 1000000 * i::bigint + 60, 'local'
		FROM generate_series(0, 4999) i`, a.ID); err != nil {
		t.Fatal(err)
	}
	cursor := time.UnixMicro(2500 * 1000000)
	for name, p := range map[string]model.SandboxPage{
		"first":               {Limit: 31},
		"after cursor":        {Limit: 31, AfterCreated: cursor, AfterID: "~"},
		"active first":        {Limit: 31, ActiveOnly: true},
		"active after cursor": {Limit: 31, ActiveOnly: true, AfterCreated: cursor, AfterID: "~"},
	} {
		plan, err := st.SandboxPagePlanForTests(ctx, a.ID, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Sort") || !strings.Contains(text, "Index") {
			t.Errorf("%s: the page's plan sorts instead of reading the index in order:\n%s", name, text)
		}
	}
	rows, err := st.ListSandboxPage(ctx, a.ID, model.SandboxPage{Limit: 31})
	if err != nil || len(rows) != 31 || rows[0].ID != "sb004999" || rows[30].ID != "sb004969" {
		t.Fatalf("first page: %d rows, %v", len(rows), err)
	}
}
