package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	// The database/sql driver "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/boxkite/boxkite/server"
)

// Advisory lock keys, in the two-int4 form pg_advisory_xact_lock(class, key)
// where a chain's key is hashtext(sandbox id). The classes spell "bxkm"
// and "bxka" in ASCII; the quota lock (quota.go) is a single bigint key
// whose high half, "bxkq", differs from both.
const (
	migrateLockClass = 0x62786b6d
	chainLockClass   = 0x62786b61
)

// auditChannel is the NOTIFY channel of audit appends; the payload is
// "<sandbox id>:<entry id>".
const auditChannel = "boxkite_audit"

// revokeChannel carries the ids of revoked API keys and deleted SSH keys
// to every server sharing the database (ListenRevocations).
const revokeChannel = "boxkite_revoke"

var postgresDialect = dialect{
	name:       "postgres",
	driverName: "pgx",
	dsn:        func(rest string) (string, error) { return rest, nil },
	rebind:     dollarPlaceholders,
	isUnique: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
	},
	storeFault: func(err error) error {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			return nil
		}
		switch {
		case pe.Code == "25006": // read_only_sql_transaction
			return server.ErrStoreReadOnly
		case pe.Code == "53100": // disk_full
			return server.ErrStoreFull
		case strings.HasPrefix(pe.Code, "58"): // system_error: io_error and the like
			return server.ErrStoreIO
		}
		return nil
	},
	forUpdate:    " FOR UPDATE",
	migrateLock:  `SELECT pg_advisory_xact_lock(` + strconv.Itoa(migrateLockClass) + `, 0)`,
	chainLock:    `SELECT pg_advisory_xact_lock(` + strconv.Itoa(chainLockClass) + `, hashtext($1))`,
	notifyAppend: `SELECT pg_notify('` + auditChannel + `', $1)`,
	notifyRevoke: `SELECT pg_notify('` + revokeChannel + `', $1)`,
}

// dollarPlaceholders rewrites ? placeholders as $1, $2, …, leaving quoted
// strings and identifiers alone.
func dollarPlaceholders(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	var quote byte
	for i := range len(q) {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var _ server.AuditListener = (*Store)(nil)

// ListenAudit implements server.AuditListener: on Postgres it LISTENs on a
// connection of its own and reports every audit append of every server
// sharing the database. On SQLite, which one server owns, it returns nil
// at once.
func (s *Store) ListenAudit(ctx context.Context, notify func(sandboxID, entryID string), connected func()) error {
	if s.d.name != postgresDialect.name {
		return nil
	}
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return fmt.Errorf("connect to listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+auditChannel); err != nil {
		return fmt.Errorf("listen %s: %w", auditChannel, err)
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		sandboxID, entryID, ok := strings.Cut(n.Payload, ":")
		if !ok {
			continue
		}
		notify(sandboxID, entryID)
	}
}

var _ server.RevocationListener = (*Store)(nil)

// ListenRevocations implements server.RevocationListener: on Postgres it
// LISTENs on a connection of its own for the ids RevokeAPIKey and
// DeleteSSHKey notify; elsewhere it returns nil at once.
func (s *Store) ListenRevocations(ctx context.Context, notify func(credentialID string), connected func()) error {
	if s.d.notifyRevoke == "" {
		return nil
	}
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return fmt.Errorf("connect to listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+revokeChannel); err != nil {
		return fmt.Errorf("listen %s: %w", revokeChannel, err)
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("wait for notification: %w", err)
		}
		notify(n.Payload)
	}
}

// notifyRevoked tells the other servers (ListenRevocations) that
// credential id is no longer valid, in tx.
func (s *Store) notifyRevoked(ctx context.Context, tx *sql.Tx, id string) error {
	if s.d.notifyRevoke == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, s.d.notifyRevoke, id); err != nil {
		return fmt.Errorf("notify revocation: %w", err)
	}
	return nil
}
