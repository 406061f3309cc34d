package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// Store is a model.Store on a SQL database.
type Store struct {
	db  *sql.DB
	d   dialect
	dsn string // the driver's DSN, for connections outside the pool (ListenAudit)

	// stmts caches prepared statements of the per-request queries (key
	// lookup, sandbox lookup): preparing costs more than running them.
	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	audit *sqldb.Committer[*model.ExecLogEntry] // group-commits audit appends (groupcommit.go)

	// gen and cache are set on SQLite only: the data generation and the
	// per-request lookups it keeps (sqldb.Generation, lookupcache.go).
	gen   *sqldb.Generation
	cache *lookups

	owner *os.File // SQLite: the owner lock (sqldb.LockOwner); nil on Postgres

	// slot queues the writes on SQLite (sqldb.WriteSlot); nil on Postgres,
	// whose row locks let writers run together.
	slot *sqldb.WriteSlot

	// usageTurns bounds the usage reads running at once on SQLite
	// (Usage); nil on Postgres, whose connections are the server's.
	usageTurns chan struct{}

	// dropChecked, in tests, runs in BeginSnapshotDrop's transaction
	// once it found the key unused, before it records the drop.
	dropChecked func()
}

var _ model.Store = (*Store)(nil)

// ErrInUse is returned by Open when another process holds the SQLite
// database: a SQLite database is one server's alone (Shared), and what
// that server keeps in memory rests on it — the lookup cache
// (lookupcache.go) sees only its own process's writes, so a second server
// revoking a key there would go unseen by the first. Several servers
// share a database on Postgres.
var ErrInUse = sqldb.ErrInUse

// Open opens the database named by dsn ("sqlite:PATH", or a bare PATH for
// SQLite, creating it if needed; or a postgres:// URL) and applies pending
// migrations.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, sqliteBusyTimeout)
}

// open is Open with SQLite's busy timeout given (tests cut it short).
func open(ctx context.Context, dsn string, busy time.Duration) (*Store, error) {
	d, rest, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	driverDSN, err := d.dsn(rest, busy)
	if err != nil {
		return nil, err
	}
	var db *sql.DB
	var gen *sqldb.Generation
	var owner *os.File
	switch {
	case d.name == sqliteDialect.name:
		if owner, err = sqldb.LockOwner(rest); err != nil {
			return nil, err
		}
		gen = sqldb.NewGeneration(exemptTables)
		sqldb.CommitWithFdatasync()
		db, err = sqldb.OpenSQLite(driverDSN, gen)
	case d.open != nil:
		db, err = d.open(driverDSN)
	default:
		db, err = sql.Open(d.driverName, driverDSN)
	}
	if err != nil {
		closeOwner(owner)
		return nil, fmt.Errorf("open database: %w", err)
	}
	// Connections are cheap in-process handles for SQLite; keep a few idle
	// so the hot path (key lookup) never pays for opening one.
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		closeOwner(owner)
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := migrate(ctx, db, d); err != nil {
		db.Close()
		closeOwner(owner)
		return nil, err
	}
	s := &Store{db: db, d: d, dsn: driverDSN, stmts: map[string]*sql.Stmt{}, gen: gen, owner: owner}
	if gen != nil {
		s.cache = newLookups(gen)
		s.slot = sqldb.NewWriteSlot(db, func(err error) bool {
			return d.storeFault(err) != nil || errors.Is(err, context.DeadlineExceeded)
		})
		s.usageTurns = make(chan struct{}, usageReaders)
	}
	s.audit = sqldb.NewCommitter(s.appendBatch, s.appendOne, isStoreWide)
	return s, nil
}

// Shared reports whether several servers may share the database (Postgres);
// a SQLite database is one server's alone.
func (s *Store) Shared() bool { return s.d.name == postgresDialect.name }

// Close closes the database.
func (s *Store) Close() error {
	s.audit.Close()
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.mu.Unlock()
	err := s.db.Close()
	closeOwner(s.owner) // after the database: the next owner finds it closed
	return err
}

func closeOwner(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}

// queryRowCached runs a hot query through a cached prepared statement.
func (s *Store) queryRowCached(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.cached(ctx, query)
	if err != nil {
		return s.db.QueryRowContext(ctx, s.q(query), args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// cached returns the prepared statement for a hot query, preparing it on
// first use. Use it in a transaction with tx.StmtContext, which reuses
// what the transaction's connection prepared before: parsing the SQL
// again costs more than running it.
func (s *Store) cached(ctx context.Context, query string) (*sql.Stmt, error) {
	query = s.q(query)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.stmts[query] = st
	return st, nil
}

// Ping runs a trivial query, which (unlike sql.DB.Ping) proves the
// database file is readable, not only that a connection exists.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// q rewrites a query written with ? placeholders for the dialect.
func (s *Store) q(query string) string { return s.d.rebind(query) }

// mapErr turns driver errors into the server's sentinel errors.
func (s *Store) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return model.ErrNotFound
	case s.d.isUnique(err):
		return fmt.Errorf("%w: %v", model.ErrConflict, err)
	}
	return err
}

// inTx runs fn in a transaction and commits it when fn returns nil. An
// error that says the database takes no writes at all (read-only, full)
// also wraps model.ErrStoreReadOnly, ErrStoreFull or ErrStoreIO.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.inTxOn(ctx, ctx, fn)
}

// inTxOn is inTx on txOn.
func (s *Store) inTxOn(ctx, txCtx context.Context, fn func(*sql.Tx) error) error {
	return s.withFault(s.txOn(ctx, txCtx, fn))
}

// withFault wraps err in model.ErrStoreReadOnly, ErrStoreFull or
// ErrStoreIO when it says the database takes no writes at all, so the
// server answers 507 or 503 with the reason rather than a bare 500.
func (s *Store) withFault(err error) error {
	if fault := s.d.storeFault(err); fault != nil && !errors.Is(err, fault) {
		return fmt.Errorf("%w: %w", fault, err)
	}
	return err
}

// tx is txOn with one context for both.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.withFault(s.txOn(ctx, ctx, fn))
}

// txOn runs fn in a transaction, on SQLite once it is the write slot's
// turn: fn must not call a method of s that writes, and may run more than
// once (sqldb.WriteSlot). The wait for the slot ends with ctx; a transaction
// of fn's own (alone in the slot, or on Postgres) runs on txCtx.
func (s *Store) txOn(ctx, txCtx context.Context, fn func(*sql.Tx) error) error {
	if s.slot != nil {
		return s.slot.TxOn(ctx, txCtx, fn)
	}
	return sqldb.RunTx(txCtx, s.db, fn)
}

// exec runs a statement that writes outside a transaction; on SQLite once
// it is the write slot's turn (which may commit it with other writes).
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	var err error
	if s.slot != nil {
		res, err = s.slot.Exec(ctx, query, args...)
	} else {
		res, err = s.db.ExecContext(ctx, query, args...)
	}
	return res, s.withFault(err)
}

// pool returns the pool as an execer for a method that runs in a
// transaction or outside one (createAccount, insertSandbox…): each write
// through it is a lone one (exec), which waits for the write slot.
func (s *Store) pool() execer { return poolExecer{s} }

type poolExecer struct{ s *Store }

func (p poolExecer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.s.exec(ctx, query, args...)
}

func (p poolExecer) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.s.db.QueryRowContext(ctx, query, args...)
}

func (p poolExecer) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.s.db.QueryContext(ctx, query, args...)
}

// Times are stored as microseconds since the epoch, UTC: portable across
// dialects, ordered as integers, and as precise as Postgres timestamps.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromNullMicros(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

// WriteStats returns how many transactions of the write slot ran more
// than one write, and how many writes they committed (tests check that
// writes waiting together share a commit).
func (s *Store) WriteStats() (batches, writes int64) {
	if s.slot == nil {
		return 0, 0
	}
	return s.slot.Stats()
}
