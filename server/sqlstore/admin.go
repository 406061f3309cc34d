package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/admin"
	"github.com/boxkite/boxkite/server/model"
)

var _ admin.Store = (*Store)(nil)

// hoursOf is micros of sandbox time as hours.
func hoursOf(us int64) float64 { return float64(max(us, 0)) / float64(time.Hour/time.Microsecond) }

// AdminUsage implements admin.Store, with the same counting as Usage:
// sandboxes creating or active (not paused) hold a slot; hours run from
// created_at to destroyed_at, paused_at or now, less time paused.
func (s *Store) AdminUsage(ctx context.Context, since, now time.Time, limit int) (admin.Usage, error) {
	var u admin.Usage
	var total int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT
		(SELECT COUNT(*) FROM accounts),
		(SELECT COUNT(*) FROM sandboxes WHERE status IN (?, ?) AND paused_with = ''),
		(SELECT CAST(COALESCE(SUM(COALESCE(destroyed_at, paused_at, ?) - created_at - paused_micros), 0) AS BIGINT)
			FROM sandboxes WHERE created_at >= ?)`),
		model.StatusCreating, api.StatusActive, micros(now), micros(since)).
		Scan(&u.TotalAccounts, &u.GlobalActive, &total)
	if err != nil {
		return u, fmt.Errorf("count usage: %w", err)
	}
	u.TotalHours = hoursOf(total)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT a.id, a.email,
		(SELECT COUNT(*) FROM sandboxes s WHERE s.account_id = a.id AND s.status IN (?, ?) AND s.paused_with = '') AS active,
		(SELECT CAST(COALESCE(SUM(COALESCE(s.destroyed_at, s.paused_at, ?) - s.created_at - s.paused_micros), 0) AS BIGINT)
			FROM sandboxes s WHERE s.account_id = a.id AND s.created_at >= ?) AS used
		FROM accounts a ORDER BY active DESC, used DESC, a.id LIMIT ?`),
		model.StatusCreating, api.StatusActive, micros(now), micros(since), limit)
	if err != nil {
		return u, fmt.Errorf("query account usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a admin.AccountUsage
		var used int64
		if err := rows.Scan(&a.AccountID, &a.Email, &a.Active, &used); err != nil {
			return u, fmt.Errorf("scan account usage: %w", err)
		}
		a.Hours = hoursOf(used)
		u.Accounts = append(u.Accounts, a)
	}
	return u, rows.Err()
}

// AdminAuditLog implements admin.Store.
func (s *Store) AdminAuditLog(ctx context.Context, accountID string, limit, offset int) ([]*model.ExecLogEntry, error) {
	if accountID != "" {
		return s.queryExecLog(ctx, `SELECT `+execLogColumns+` FROM exec_log WHERE account_id = ?
			ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?`, accountID, limit, offset)
	}
	return s.queryExecLog(ctx, `SELECT `+execLogColumns+` FROM exec_log
		ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
}

// AppendAdminAccess implements admin.Store.
func (s *Store) AppendAdminAccess(ctx context.Context, a *admin.Access) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO admin_access_log (id, account_id, email, key_id, method, path, query, status, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), a.ID, a.AccountID, a.Email, a.KeyID, a.Method, a.Path, a.Query, a.Status, micros(a.At))
	if err != nil {
		return fmt.Errorf("insert admin access: %w", s.mapErr(err))
	}
	return nil
}

// AdminAccessLog implements admin.Store.
func (s *Store) AdminAccessLog(ctx context.Context, limit, offset int) ([]*admin.Access, error) {
	return queryAll(ctx, s, "admin access log", func(r rowScanner) (*admin.Access, error) {
		var a admin.Access
		var at int64
		if err := r.Scan(&a.ID, &a.AccountID, &a.Email, &a.KeyID, &a.Method, &a.Path, &a.Query, &a.Status, &at); err != nil {
			return nil, err
		}
		a.At = fromMicros(at)
		return &a, nil
	}, `SELECT id, account_id, email, key_id, method, path, query, status, at
		FROM admin_access_log ORDER BY at DESC, id DESC LIMIT ? OFFSET ?`, limit, offset)
}
