package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
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
// to every server sharing the database (ListenRevocations), and
// "demoted:<key id>:<count>" for an organization's admin key its
// holder's demotion lowered (SetOrgMemberRole).
const revokeChannel = "boxkite_revoke"

var postgresDialect = dialect{
	name:       "postgres",
	driverName: "pgx",
	open:       sqldb.OpenPostgres,
	dsn:        func(rest string, _ time.Duration) (string, error) { return rest, nil },
	rebind:     sqldb.DollarPlaceholders,
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
			return model.ErrStoreReadOnly
		case pe.Code == "53100": // disk_full
			return model.ErrStoreFull
		case strings.HasPrefix(pe.Code, "58"): // system_error: io_error and the like
			return model.ErrStoreIO
		}
		return nil
	},
	forUpdate:    " FOR UPDATE",
	migrateLock:  `SELECT pg_advisory_xact_lock(` + strconv.Itoa(migrateLockClass) + `, 0)`,
	chainLock:    `SELECT pg_advisory_xact_lock(` + strconv.Itoa(chainLockClass) + `, hashtext($1))`,
	notifyAppend: `SELECT pg_notify('` + auditChannel + `', $1)`,
	notifyRevoke: `SELECT pg_notify('` + revokeChannel + `', $1)`,
}

var _ model.AuditListener = (*Store)(nil)

// ListenAudit implements model.AuditListener: on Postgres it LISTENs on a
// connection of its own and reports every audit append of every server
// sharing the database. On SQLite, which one server owns, it returns nil
// at once.
func (s *Store) ListenAudit(ctx context.Context, notify func(sandboxID, entryID string), connected func()) error {
	return s.listen(ctx, auditChannel, func(payload string) {
		if sandboxID, entryID, ok := strings.Cut(payload, ":"); ok {
			notify(sandboxID, entryID)
		}
	}, connected)
}

// listen LISTENs on channel on a connection of its own and calls notify
// with each payload until ctx is done (nil) or the connection fails. Off
// Postgres it returns nil at once: one server owns a SQLite database.
func (s *Store) listen(ctx context.Context, channel string, notify func(payload string), connected func()) error {
	if s.d.name != postgresDialect.name {
		return nil
	}
	return sqldb.Listen(ctx, s.dsn, channel, notify, connected)
}

var _ model.RevocationListener = (*Store)(nil)

// ListenRevocations implements model.RevocationListener: on Postgres it
// LISTENs on a connection of its own for the ids RevokeAPIKey and
// DeleteSSHKey notify, and the demotions SetOrgMemberRole does; elsewhere
// it returns nil at once.
func (s *Store) ListenRevocations(ctx context.Context, notify func(model.Revocation), connected func()) error {
	return s.listen(ctx, revokeChannel, func(payload string) { notify(parseRevocation(payload)) }, connected)
}

// demotedPrefix starts a demotion's notice on revokeChannel.
const demotedPrefix = "demoted:"

// parseRevocation reads a notice on revokeChannel: a credential id, or
// demotedPrefix, a key id, ":" and its count of demotions. A demotion's
// notice that does not parse is taken for a revocation of the whole
// payload, which names no credential and so ends nothing.
func parseRevocation(payload string) model.Revocation {
	if rest, ok := strings.CutPrefix(payload, demotedPrefix); ok {
		if i := strings.LastIndexByte(rest, ':'); i > 0 {
			if n, err := strconv.ParseInt(rest[i+1:], 10, 64); err == nil && n > 0 {
				return model.Revocation{CredentialID: rest[:i], Demotions: n}
			}
		}
	}
	return model.Revocation{CredentialID: payload}
}

// notifyDemoted tells the other servers (ListenRevocations) that admin
// key id was lowered to a member's, its count of demotions now n, in tx.
func (s *Store) notifyDemoted(ctx context.Context, tx *sql.Tx, id string, n int64) error {
	if s.d.notifyRevoke == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, s.d.notifyRevoke, demotedPrefix+id+":"+strconv.FormatInt(n, 10)); err != nil {
		return fmt.Errorf("notify demotion: %w", err)
	}
	return nil
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
