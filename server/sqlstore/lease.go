package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// TakeSandboxLease implements model.SandboxStore: one conditional UPDATE,
// which Postgres re-checks on the row a concurrent taker committed (so of
// two servers taking a free lease at once one gets it) and SQLite runs in
// its write turn.
func (s *Store) TakeSandboxLease(ctx context.Context, id, owner string, now, until time.Time) (bool, error) {
	res, err := s.exec(ctx, s.q(`UPDATE sandboxes SET lifecycle_owner = ?, lifecycle_until = ?
		WHERE id = ? AND (lifecycle_owner = '' OR lifecycle_owner = ? OR lifecycle_until < ?)`),
		owner, micros(until), id, owner, micros(now))
	if err != nil {
		return false, fmt.Errorf("take sandbox lease: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take sandbox lease: %w", err)
	}
	if n > 0 {
		return true, nil
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sandboxes WHERE id = ?`), id).Scan(&rows); err != nil {
		return false, fmt.Errorf("find leased sandbox: %w", err)
	}
	if rows == 0 {
		return false, model.ErrNotFound
	}
	return false, nil
}

// ReleaseSandboxLease implements model.SandboxStore.
func (s *Store) ReleaseSandboxLease(ctx context.Context, id, owner string) error {
	if _, err := s.exec(ctx, s.q(`UPDATE sandboxes SET lifecycle_owner = '', lifecycle_until = 0
		WHERE id = ? AND lifecycle_owner = ?`), id, owner); err != nil {
		return fmt.Errorf("release sandbox lease: %w", err)
	}
	return nil
}
