package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"

	"modernc.org/sqlite"
)

// The data generation of a SQLite database (issue 27). server/sqlstore
// caches the per-request lookups (the API key with its account,
// organization and membership; the sandbox) on SQLite, and a cached
// answer must never outlive a change committed before the request that
// reads it: a revoked key, a removed member, a destroyed sandbox is
// refused at its very next request. Rather than have every method that
// changes those tables remember to drop the cache, SQLite itself reports
// the changes: every connection of the pool (OpenSQLite) registers a
// pre-update hook, which SQLite calls before each row it inserts, updates
// or deletes in any table (foreign-key cascades and REPLACE conflicts
// included; with the hook set SQLite also skips its truncate
// optimisation, which would bypass it), and commit and rollback hooks. A
// connection that changed a row of any table but the exempt ones (those
// an exec writes: the audit chain…) is dirty: it counts in pending from
// its first such change until the statement or COMMIT that ended its
// transaction has returned, and then the generation moves on.
//
// A lookup answers from the cache (Cache) only while no connection is
// dirty and under the generation the entry was read in (read before the
// query, so a commit that lands during the query invalidates what it
// read). So between a change's first row and the moment its commit
// returned, every lookup goes to the database; after it, none can find an
// entry read before it. A new table, a new method, a cascade: none can be
// forgotten, since the only list is the exempt one.
//
// This holds for the connections of this process only: a SQLite database
// is one server's (LockOwner).

// Generation counts the committed changes to a SQLite database's tables.
type Generation struct {
	exempt  map[string]bool // tables whose changes do not count
	n       atomic.Uint64   // moves after each transaction that changed a row of a table not exempt
	pending atomic.Int64    // connections with such a change whose transaction has not yet returned

	prepared atomic.Uint64 // statements SQLite prepared (parsed and planned), for the benchmarks
}

// NewGeneration returns a generation that the changes to every table but
// the exempt ones move. exempt is not changed afterwards.
func NewGeneration(exempt map[string]bool) *Generation {
	return &Generation{exempt: exempt}
}

// Current returns the generation and whether it is settled: false while
// a change is under way, and then nothing may be answered from a cache.
func (g *Generation) Current() (n uint64, settled bool) {
	if g.pending.Load() != 0 {
		return 0, false
	}
	return g.n.Load(), true
}

// N returns the generation, settled or not.
func (g *Generation) N() uint64 { return g.n.Load() }

// Prepared returns how many statements SQLite prepared (parsed and
// planned) on the generation's connections.
func (g *Generation) Prepared() uint64 { return g.prepared.Load() }

// hooks is what the modernc connection offers to report its changes.
type hooks interface {
	RegisterPreUpdateHook(sqlite.PreUpdateHookFn)
	RegisterCommitHook(sqlite.CommitHookFn)
	RegisterRollbackHook(sqlite.RollbackHookFn)
}

// sqliteConn is what database/sql uses of a modernc connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	hooks
}

// OpenSQLite opens a pool on dsn (SQLiteDSN) whose connections move g
// and keep the statements they ran prepared (stmtcache.go).
func OpenSQLite(dsn string, g *Generation) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(&genConnector{inner: c, g: g}), nil
}

type genConnector struct {
	inner driver.Connector
	g     *Generation
}

func (c *genConnector) Driver() driver.Driver { return c.inner.Driver() }

func (c *genConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(sqliteConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("open database: the sqlite driver's connection (%T) reports no changes", dc)
	}
	gc := &genConn{sqliteConn: sc, g: c.g}
	sc.RegisterPreUpdateHook(gc.changed)
	sc.RegisterCommitHook(func() int32 { gc.ended.Store(gc.dirty.Load()); return 0 })
	sc.RegisterRollbackHook(func() { gc.ended.Store(gc.dirty.Load()) })
	return gc, nil
}

// genConn is a connection that keeps its dirty state. The hooks run on the
// goroutine that runs the statement; database/sql hands a connection to
// one goroutine at a time.
type genConn struct {
	sqliteConn
	g     *Generation
	dirty atomic.Bool // changed a row of a table not exempt
	ended atomic.Bool // and its transaction committed or rolled back since
	stmts stmtCache   // the statements it ran, prepared
}

// changed is the pre-update hook.
func (c *genConn) changed(d sqlite.SQLitePreUpdateData) {
	if c.g.exempt[d.TableName] || c.dirty.Load() {
		return
	}
	c.dirty.Store(true)
	c.g.pending.Add(1)
}

// settle moves the generation on once the transaction of a change has
// returned (or, with force, when the connection closes: an open
// transaction is rolled back then). The generation moves before pending
// drops, so a lookup that sees nothing pending sees the new generation.
func (c *genConn) settle(force bool) {
	if !c.dirty.Load() || !force && !c.ended.Load() {
		return
	}
	c.dirty.Store(false)
	c.ended.Store(false)
	c.g.n.Add(1)
	c.g.pending.Add(-1)
}

// ExecContext runs query from the connection's statements (stmtcache.go).
func (c *genConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	defer c.settle(false)
	if cs := c.stmts.get(ctx, c, query); cs != nil {
		return cs.st.ExecContext(ctx, args)
	}
	c.g.prepared.Add(1)
	return c.sqliteConn.ExecContext(ctx, query, args)
}

// QueryContext settles what ended before it; a query that writes (…
// RETURNING) outside a transaction commits while its rows are read, and is
// settled by the connection's next call, its reset or its close: pending
// until then, so the cache is bypassed meanwhile, never stale. It runs
// query from the connection's statements (stmtcache.go).
func (c *genConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.settle(false)
	if cs := c.stmts.get(ctx, c, query); cs != nil {
		rows, err := cs.st.QueryContext(ctx, args)
		if err != nil {
			return nil, err
		}
		cs.busy = true
		return &cachedRows{Rows: rows, cs: cs}, nil
	}
	c.g.prepared.Add(1)
	return c.sqliteConn.QueryContext(ctx, query, args)
}

func (c *genConn) ResetSession(ctx context.Context) error {
	c.settle(false)
	return c.sqliteConn.ResetSession(ctx)
}

func (c *genConn) Ping(ctx context.Context) error {
	c.settle(false)
	return c.sqliteConn.Ping(ctx)
}

func (c *genConn) Close() error {
	c.stmts.close()
	err := c.sqliteConn.Close()
	c.settle(true)
	return err
}

func (c *genConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *genConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.g.prepared.Add(1)
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s, ok := st.(sqliteStmt)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("prepare: the sqlite driver's statement (%T) takes no context", st)
	}
	return &genStmt{sqliteStmt: s, c: c}, nil
}

func (c *genConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *genConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.settle(false)
	tx, err := c.sqliteConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &genTx{Tx: tx, c: c}, nil
}

type genTx struct {
	driver.Tx
	c *genConn
}

func (t *genTx) Commit() error {
	defer t.c.settle(false)
	return t.Tx.Commit()
}

func (t *genTx) Rollback() error {
	defer t.c.settle(false)
	return t.Tx.Rollback()
}

type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type genStmt struct {
	sqliteStmt
	c *genConn
}

func (s *genStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	defer s.c.settle(false)
	return s.sqliteStmt.ExecContext(ctx, args)
}

func (s *genStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.settle(false)
	return s.sqliteStmt.QueryContext(ctx, args)
}
