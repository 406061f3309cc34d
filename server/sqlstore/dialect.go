package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// A dialect is everything that differs between SQL databases. Queries in
// this package are written once, with ? placeholders and portable SQL
// (ON CONFLICT DO NOTHING, BIGINT times); a dialect rewrites placeholders and
// knows its driver, its DSN and how it reports a unique-constraint violation.
// Postgres (postgres.go) is the other value of this type, with its own
// migrations/postgres directory.
type dialect struct {
	name       string // also the migrations directory: migrations/<name>
	driverName string // for sql.Open
	// open, when set, opens the pool instead of sql.Open(driverName, dsn).
	open func(dsn string) (*sql.DB, error)
	// dsn turns the part of the store DSN after the scheme into a driver
	// DSN; busy is how long a connection waits for a lock another process
	// holds, where the database has such a setting (SQLite).
	dsn func(rest string, busy time.Duration) (string, error)
	// rebind rewrites ? placeholders into the dialect's form.
	rebind func(query string) string
	// isUnique reports whether err is a unique or primary-key violation.
	isUnique func(err error) bool
	// forUpdate ends a SELECT whose rows the transaction will update, so
	// that concurrent read-modify-writes queue instead of losing updates
	// (SQLite's BEGIN IMMEDIATE already serialises writers).
	forUpdate string
	// migrateLock, when set, runs first in the migration transaction so
	// that servers starting together migrate one after the other.
	migrateLock string
	// chainLock, when set, runs first in an audit append's transaction with
	// the sandbox id, so appends to one chain queue instead of colliding.
	chainLock string
	// notifyAppend, when set, runs in an audit append's transaction with
	// "<sandbox id>:<entry id>", to tell the other servers (see ListenAudit).
	notifyAppend string
	// notifyRevoke, when set, runs in the transaction that revokes an API
	// key or deletes an SSH key, with its id, and in the one that demotes
	// a member, for each admin key lowered (see ListenRevocations).
	notifyRevoke string
	// storeFault returns model.ErrStoreReadOnly, ErrStoreFull or
	// ErrStoreIO when err says the database cannot take writes at all,
	// else nil.
	storeFault func(err error) error
}

var sqliteDialect = dialect{
	name:       "sqlite",
	driverName: "sqlite",
	dsn:        sqldb.SQLiteDSN,
	rebind:     func(q string) string { return q },
	isUnique: func(err error) bool {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return false
		}
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	},
	storeFault: func(err error) error {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return nil
		}
		switch se.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_READONLY:
			return model.ErrStoreReadOnly
		case sqlite3.SQLITE_FULL:
			return model.ErrStoreFull
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN:
			return model.ErrStoreIO
		}
		return nil
	},
}

// sqliteBusyTimeout is how long a SQLite connection waits for a lock that
// another process holds: the store's own writers queue in its write slot
// (sqldb.WriteSlot) and find the lock free.
const sqliteBusyTimeout = 10 * time.Second

// parseDSN splits a store DSN into its dialect and the rest: "sqlite:PATH"
// or a bare path mean SQLite; postgres:// and postgresql:// URLs, Postgres
// (the whole URL is the driver's DSN).
func parseDSN(dsn string) (dialect, string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return sqliteDialect, strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//"), nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgresDialect, dsn, nil
	case strings.Contains(dsn, "://"):
		return dialect{}, "", fmt.Errorf("unknown database scheme in %q; use sqlite:PATH or postgres://…", dsn)
	}
	return sqliteDialect, dsn, nil
}
