package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

var _ model.QuotaStore = (*Store)(nil)

// quotaLockID is the Postgres advisory lock that serialises quota checks
// across servers sharing one database ("bxkquota" in ASCII).
const quotaLockID = 0x62786b71756f7461

// ReserveSandboxes implements model.QuotaStore. The critical section is
// the transaction: SQLite's BEGIN IMMEDIATE (see sqldb.SQLiteDSN) lets one
// writer in at a time, across processes too; on Postgres the transaction
// first takes an advisory lock that every reservation shares.
func (s *Store) ReserveSandboxes(ctx context.Context, accountID string, since, now time.Time,
	check func(model.Usage) error, sbs []*model.Sandbox,
) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.name == "postgres" {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(quotaLockID)); err != nil {
				return fmt.Errorf("take quota lock: %w", err)
			}
		}
		u, err := s.usage(ctx, tx, accountID, since, now)
		if err != nil {
			return err
		}
		if err := check(u); err != nil {
			return err
		}
		for _, sb := range sbs {
			if err := s.insertSandbox(ctx, tx, sb); err != nil {
				return err
			}
		}
		return nil
	})
}

// Usage implements model.QuotaStore. On SQLite at most usageReaders run
// at once: every create reads its usage first, so a burst of creates asks
// all at once, and each read past the pool's idle connections opened a
// connection of its own (the file, the pragmas, the schema parsed again;
// half of the read's CPU in a burst of 100, issue 27) only to close it
// again. The read is short and CPU-bound: waiting for one of a few turns
// costs a burst nothing.
func (s *Store) Usage(ctx context.Context, accountID string, since, now time.Time) (model.Usage, error) {
	if s.usageTurns != nil {
		select {
		case s.usageTurns <- struct{}{}:
			defer func() { <-s.usageTurns }()
		case <-ctx.Done():
			return model.Usage{}, fmt.Errorf("count usage: %w", ctx.Err())
		}
	}
	return s.usage(ctx, s.pool(), accountID, since, now)
}

// usageReaders bounds the SQLite usage reads running at once (Usage): as
// many as the CPUs would do, well below the pool's idle connections (8).
const usageReaders = 4

// The usage queries, prepared once (Store.cached) rather than parsed on
// every create, twice (Usage and the reservation's check).
const (
	usageCountsQuery = `SELECT
		(SELECT COUNT(*) FROM sandboxes WHERE status IN (?, ?) AND paused_with = ''),
		(SELECT COUNT(*) FROM sandboxes WHERE account_id = ? AND status IN (?, ?) AND paused_with = ''),
		(SELECT CAST(COALESCE(SUM(COALESCE(destroyed_at, paused_at, ?) - created_at - paused_micros), 0) AS BIGINT)
			FROM sandboxes WHERE account_id = ? AND created_at >= ?)`
	usageLabelsQuery = `SELECT DISTINCT label FROM sandboxes
		WHERE account_id = ? AND status IN (?, ?) AND label <> ''`
)

// usageStmt is the cached statement for query, bound to ex when ex is a
// transaction.
func (s *Store) usageStmt(ctx context.Context, ex execer, query string) (*sql.Stmt, error) {
	st, err := s.cached(ctx, query)
	if err != nil {
		return nil, err
	}
	if tx, ok := ex.(*sql.Tx); ok {
		return tx.StmtContext(ctx, st), nil
	}
	return st, nil
}

// usage counts sandboxes being created or active (both hold a slot; a
// paused one does not), and sums the hours of the account's sandboxes
// created since: until destroyed_at, paused_at for those paused, or now
// for those still running, less the time they spent paused before.
func (s *Store) usage(ctx context.Context, ex execer, accountID string, since, now time.Time) (model.Usage, error) {
	var u model.Usage
	var usedMicros int64
	sinceMicros := micros(since)
	if since.IsZero() {
		// No hours asked (no monthly limit applies): an empty range of the
		// index instead of every sandbox created this month.
		sinceMicros = math.MaxInt64
	}
	counts, err := s.usageStmt(ctx, ex, usageCountsQuery)
	if err != nil {
		return u, fmt.Errorf("count usage: %w", err)
	}
	err = counts.QueryRowContext(ctx,
		model.StatusCreating, api.StatusActive,
		accountID, model.StatusCreating, api.StatusActive,
		micros(now), accountID, sinceMicros).
		Scan(&u.GlobalActive, &u.AccountActive, &usedMicros)
	if err != nil {
		return u, fmt.Errorf("count usage: %w", err)
	}
	u.MonthlyHours = float64(max(usedMicros, 0)) / float64(time.Hour/time.Microsecond)
	labels, err := s.usageStmt(ctx, ex, usageLabelsQuery)
	if err != nil {
		return u, fmt.Errorf("list active labels: %w", err)
	}
	rows, err := labels.QueryContext(ctx, accountID, model.StatusCreating, api.StatusActive)
	if err != nil {
		return u, fmt.Errorf("list active labels: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var label string
		if err := rows.Scan(&label); err != nil {
			return u, fmt.Errorf("list active labels: %w", err)
		}
		if u.ActiveLabels == nil {
			u.ActiveLabels = map[string]bool{}
		}
		u.ActiveLabels[label] = true
	}
	if err := rows.Err(); err != nil {
		return u, fmt.Errorf("list active labels: %w", err)
	}
	return u, nil
}
