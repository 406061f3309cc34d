package sqldb

import (
	"context"
	"database/sql/driver"
	"reflect"
)

// The prepared statements of a SQLite connection (issue 27 item 3).
// server/sqlstore runs its SQL through the pool (db.ExecContext, tx.QueryRowContext:
// no Prepare), and the modernc driver then parses and plans each statement
// afresh, runs it once and finalizes it: a third of SQLite's CPU on a
// cold create's writes, ~7 statements per create and delete
// (bench/issue27/session26-burst26.md). Each connection now keeps the
// statements it ran, by their SQL, and runs them again from there: the
// driver resets a statement after its run (or when its rows close) and
// SQLite prepares it again by itself if the schema changed (prepare_v2).
//
// A statement whose rows are still open (a query within a loop over
// another one's rows, on the same connection of a transaction) is busy:
// the same SQL meanwhile runs as before, prepared for that one call. The
// cache holds at most stmtCacheSize statements per connection, the least
// recently used going first; a connection's statements are finalized
// before it closes.

// stmtCacheSize bounds the statements one connection keeps prepared: the
// store's hot paths (create, delete, exec's audit, the lookups) use a few
// dozen; the rest (admin, reports) may come and go.
const stmtCacheSize = 64

// cachedStmt is a statement a connection keeps.
type cachedStmt struct {
	st   sqliteStmt
	busy bool   // its rows are open
	used uint64 // the connection's use count at its last use
}

// stmtCache is a connection's statements by their SQL. database/sql hands
// a connection to one goroutine at a time and closes rows under the same
// lock, so it needs none of its own.
type stmtCache struct {
	byQuery map[string]*cachedStmt
	uses    uint64
}

// get returns the idle statement of query, preparing it on c if there is
// none; nil if it is busy or cannot be prepared (the caller then runs the
// query the uncached way, which reports the error).
func (k *stmtCache) get(ctx context.Context, c *genConn, query string) *cachedStmt {
	k.uses++
	if cs := k.byQuery[query]; cs != nil {
		if cs.busy {
			return nil
		}
		cs.used = k.uses
		return cs
	}
	c.g.prepared.Add(1)
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	s, ok := st.(sqliteStmt)
	if !ok {
		st.Close()
		return nil
	}
	if k.byQuery == nil {
		k.byQuery = make(map[string]*cachedStmt)
	}
	if len(k.byQuery) >= stmtCacheSize {
		k.evict()
	}
	cs := &cachedStmt{st: s, used: k.uses}
	k.byQuery[query] = cs
	return cs
}

// evict finalizes the least recently used idle statement.
func (k *stmtCache) evict() {
	var (
		oldest string
		found  *cachedStmt
	)
	for q, cs := range k.byQuery {
		if !cs.busy && (found == nil || cs.used < found.used) {
			oldest, found = q, cs
		}
	}
	if found != nil {
		delete(k.byQuery, oldest)
		found.st.Close()
	}
}

// close finalizes every statement: the connection closes, and the pool
// closes a connection only once no rows of it are open.
func (k *stmtCache) close() {
	for q, cs := range k.byQuery {
		cs.st.Close()
		delete(k.byQuery, q)
	}
}

// cachedRows are the rows of a cached statement, which is busy until they
// close.
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.cs.busy = false
	return err
}

// The column types the driver's rows report, passed on (database/sql's
// ColumnTypes; the store itself reads none).

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
