package sqldb

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// openTestDB opens a SQLite database in a scratch directory, its pool's
// connections moving the returned generation, no table exempt.
func openTestDB(t *testing.T) (*sql.DB, *Generation) {
	t.Helper()
	dsn, err := SQLiteDSN(filepath.Join(t.TempDir(), "test.db"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGeneration(nil)
	db, err := OpenSQLite(dsn, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, g
}

// stmtConn is one connection of db's pool, with a scratch table t of rows
// (1, 'a') … (3, 'c').
func stmtConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, q := range []string{
		`CREATE TEMP TABLE t (n INTEGER PRIMARY KEY, v TEXT)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
	} {
		if _, err := c.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// cachedCount is the statements c keeps prepared.
func cachedCount(t *testing.T, c *sql.Conn) int {
	t.Helper()
	var n int
	if err := c.Raw(func(dc any) error {
		n = len(dc.(*genConn).stmts.byQuery)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementsPreparedOnce: a connection prepares a statement the first
// time it runs it and then runs it from its cache, queries and writes
// alike, with new arguments each time.
func TestStatementsPreparedOnce(t *testing.T) {
	db, g := openTestDB(t)
	c := stmtConn(t, db)
	before := g.prepared.Load()
	var got []string
	for i := range 10 {
		if _, err := c.ExecContext(t.Context(), `UPDATE t SET v = ? WHERE n = ?`, fmt.Sprint("v", i), i%3+1); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := c.QueryRowContext(t.Context(), `SELECT v FROM t WHERE n = ?`, i%3+1).Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if n := g.prepared.Load() - before; n != 2 {
		t.Errorf("prepared %d statements for 20 runs of 2, want 2", n)
	}
	want := []string{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values read back (-want +got):\n%s", diff)
	}
}

// TestStatementBusyWhileItsRowsAreOpen: the same query run again while its
// rows are still being read (a loop over a query's rows that runs it
// again, or writes with it, on the connection of a transaction) is
// prepared for that call: neither run resets the other's statement.
func TestStatementBusyWhileItsRowsAreOpen(t *testing.T) {
	db, g := openTestDB(t)
	c := stmtConn(t, db)
	const q = `SELECT n, v FROM t WHERE n >= ? ORDER BY n`
	read := func(rows *sql.Rows) []string {
		t.Helper()
		var out []string
		for rows.Next() {
			var n int
			var v string
			if err := rows.Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(n, v))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Twice: the first round prepares the statement, the second runs the
	// outer query from the cache.
	for round := range 2 {
		outer, err := c.QueryContext(t.Context(), q, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for outer.Next() {
			var n int
			var v string
			if err := outer.Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			inner, err := c.QueryContext(t.Context(), q, n)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(n, v, read(inner)))
			inner.Close()
		}
		if err := outer.Err(); err != nil {
			t.Fatal(err)
		}
		outer.Close()
		want := []string{"1a[1a 2b 3c]", "2b[2b 3c]", "3c[3c]"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d: rows (-want +got):\n%s", round, diff)
		}
	}
	// Closed, it serves again from the cache.
	before := g.prepared.Load()
	rows, err := c.QueryContext(t.Context(), q, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"3c"}, read(rows)); diff != "" {
		t.Errorf("after the loop (-want +got):\n%s", diff)
	}
	rows.Close()
	if n := g.prepared.Load() - before; n != 0 {
		t.Errorf("prepared %d statements for a query whose rows were closed, want 0", n)
	}
}

// TestStatementCacheBounded: a connection keeps at most stmtCacheSize
// statements, the least recently used going first, and what it evicted
// runs again (prepared anew).
func TestStatementCacheBounded(t *testing.T) {
	db, g := openTestDB(t)
	c := stmtConn(t, db)
	query := func(i int) {
		t.Helper()
		var got int
		if err := c.QueryRowContext(t.Context(), fmt.Sprintf(`SELECT %d + n FROM t WHERE n = ?`, i), 1).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != i+1 {
			t.Fatalf("query %d answered %d", i, got)
		}
	}
	for i := range 2 * stmtCacheSize {
		query(i)
		if n := cachedCount(t, c); n > stmtCacheSize {
			t.Fatalf("after %d queries the connection keeps %d statements, want at most %d", i+1, n, stmtCacheSize)
		}
	}
	before := g.prepared.Load()
	query(2*stmtCacheSize - 1) // the newest: kept
	query(0)                   // the oldest: evicted, prepared again
	if n := g.prepared.Load() - before; n != 1 {
		t.Errorf("prepared %d statements for one kept and one evicted, want 1", n)
	}
}

// TestStatementAfterSchemaChange: a kept statement sees the schema as it is
// when it runs (SQLite prepares it again by itself).
func TestStatementAfterSchemaChange(t *testing.T) {
	db, _ := openTestDB(t)
	c := stmtConn(t, db)
	const q = `SELECT * FROM t WHERE n = ?`
	count := func() int {
		t.Helper()
		rows, err := c.QueryContext(t.Context(), q, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return len(cols)
	}
	if n := count(); n != 2 {
		t.Fatalf("columns before: %d, want 2", n)
	}
	if _, err := c.ExecContext(t.Context(), `ALTER TABLE t ADD COLUMN w TEXT`); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Errorf("columns after ALTER TABLE: %d, want 3", n)
	}
}
