package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

const sandboxColumns = `id, account_id, label, size, storage_gb, lifetime_minutes, status, destroy_reason,
	created_at, expires_at, destroyed_at, driver,
	endpoint_network, endpoint_address, endpoint_token, endpoint_cert,
	paused_with, paused_at, paused_micros, paused_processes, auto_pause, destroying`

// A paused sandbox is stored as status 'active' with paused_with set: the
// status column's CHECK constraint predates pausing, and SQLite cannot
// change it without rebuilding a table other tables reference. So
// "active" in a query means status 'active' AND paused_with = ''.

// dbStatus is the status column's value for sb.
func dbStatus(sb *model.Sandbox) string {
	if sb.Status == api.StatusPaused {
		return api.StatusActive
	}
	return sb.Status
}

// dbPausedWith is the paused_with column's value for sb: ” unless paused.
func dbPausedWith(sb *model.Sandbox) string {
	if sb.Status != api.StatusPaused {
		return ""
	}
	return sb.PausedWith
}

// pausedProcesses is the paused_processes column's value for sb.
func pausedProcesses(sb *model.Sandbox) string {
	if len(sb.PausedProcesses) == 0 || sb.Status != api.StatusPaused {
		return ""
	}
	b, _ := json.Marshal(sb.PausedProcesses) // plain data: cannot fail
	return string(b)
}

// dbDestroying is the destroying column's value for sb: empty once it is
// no longer live (the removal it announced is recorded).
func dbDestroying(sb *model.Sandbox) string {
	if !sb.Live() {
		return ""
	}
	return sb.Destroying
}

func scanSandbox(r rowScanner) (*model.Sandbox, error) {
	var sb model.Sandbox
	var created, expires int64
	var destroyed, pausedAt sql.NullInt64
	var cert string
	var pausedMicros int64
	var pausedProcs string
	var autoPause int
	err := r.Scan(&sb.ID, &sb.AccountID, &sb.Label, &sb.Size, &sb.StorageGB, &sb.LifetimeMinutes, &sb.Status, &sb.DestroyReason,
		&created, &expires, &destroyed, &sb.Driver,
		&sb.Endpoint.Network, &sb.Endpoint.Address, &sb.Endpoint.Token, &cert,
		&sb.PausedWith, &pausedAt, &pausedMicros, &pausedProcs, &autoPause, &sb.Destroying)
	if err != nil {
		return nil, err
	}
	sb.CreatedAt = fromMicros(created)
	sb.ExpiresAt = fromMicros(expires)
	sb.DestroyedAt = fromNullMicros(destroyed)
	sb.PausedAt = fromNullMicros(pausedAt)
	sb.PausedTotal = time.Duration(pausedMicros) * time.Microsecond
	sb.AutoPause = autoPause != 0
	if pausedProcs != "" {
		if err := json.Unmarshal([]byte(pausedProcs), &sb.PausedProcesses); err != nil {
			return nil, fmt.Errorf("decode paused processes: %w", err)
		}
	}
	if sb.Status == api.StatusActive && sb.PausedWith != "" {
		sb.Status = api.StatusPaused
	}
	if cert != "" {
		sb.Endpoint.CertPEM = []byte(cert)
	}
	return &sb, nil
}

func (s *Store) querySandboxes(ctx context.Context, query string, args ...any) ([]*model.Sandbox, error) {
	return queryAll(ctx, s, "sandboxes", scanSandbox, query, args...)
}

// CreateSandbox implements model.SandboxStore.
func (s *Store) CreateSandbox(ctx context.Context, sb *model.Sandbox) error {
	return s.insertSandbox(ctx, s.pool(), sb)
}

func (s *Store) insertSandbox(ctx context.Context, ex execer, sb *model.Sandbox) error {
	_, err := ex.ExecContext(ctx, s.q(`INSERT INTO sandboxes (`+sandboxColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		sb.ID, sb.AccountID, sb.Label, sb.Size, sb.StorageGB, sb.LifetimeMinutes, dbStatus(sb), sb.DestroyReason,
		micros(sb.CreatedAt), micros(sb.ExpiresAt), nullMicros(sb.DestroyedAt), sb.Driver,
		sb.Endpoint.Network, sb.Endpoint.Address, sb.Endpoint.Token, string(sb.Endpoint.CertPEM),
		dbPausedWith(sb), nullMicros(sb.PausedAt), sb.PausedTotal.Microseconds(), pausedProcesses(sb), boolInt(sb.AutoPause), dbDestroying(sb))
	if err != nil {
		return fmt.Errorf("insert sandbox: %w", s.mapErr(err))
	}
	return nil
}

// sandboxLookupQuery is Sandbox's query.
const sandboxLookupQuery = `SELECT ` + sandboxColumns + `
		FROM sandboxes WHERE id = ? AND account_id = ?`

// Sandbox implements model.SandboxStore. On SQLite the answer is cached
// until any change to the database but an audit append (sqldb.Generation).
func (s *Store) Sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error) {
	if s.cache == nil {
		return s.sandbox(ctx, accountID, id)
	}
	k := [2]string{accountID, id}
	if sb, ok := s.cache.sandboxes.Get(k); ok {
		return sb, nil
	}
	n := s.cache.sandboxes.ReadGen()
	sb, err := s.sandbox(ctx, accountID, id)
	if err == nil {
		s.cache.sandboxes.Put(n, k, sb)
	}
	return sb, err
}

func (s *Store) sandbox(ctx context.Context, accountID, id string) (*model.Sandbox, error) {
	sb, err := scanSandbox(s.queryRowCached(ctx, sandboxLookupQuery, id, accountID))
	if err != nil {
		return nil, s.mapErr(err)
	}
	return sb, nil
}

// SandboxByID implements model.SandboxStore.
func (s *Store) SandboxByID(ctx context.Context, id string) (*model.Sandbox, error) {
	sb, err := scanSandbox(s.db.QueryRowContext(ctx, s.q(`SELECT `+sandboxColumns+` FROM sandboxes WHERE id = ?`), id))
	if err != nil {
		return nil, s.mapErr(err)
	}
	return sb, nil
}

// ListSandboxes implements model.SandboxStore.
func (s *Store) ListSandboxes(ctx context.Context, accountID string, activeOnly bool) ([]*model.Sandbox, error) {
	return s.ListSandboxPage(ctx, accountID, model.SandboxPage{ActiveOnly: activeOnly})
}

// ListSandboxPage implements model.SandboxStore. The cursor is a keyset
// (created_at, id), not an offset: rows created or destroyed between two
// pages move no other row across the page boundary. The index
// sandboxes_account_created_id (migrations 0277 and 0281) serves the
// order, and sandboxes_account_status_created (0278) that of the live ones.
// On Postgres a page (a limit) is read in the index's order whatever the
// planner's statistics say (sqldb.QueryIndexOrdered).
func (s *Store) ListSandboxPage(ctx context.Context, accountID string, p model.SandboxPage) ([]*model.Sandbox, error) {
	query, args := sandboxPageQuery(accountID, p)
	return queryPage(ctx, s, p, "sandboxes", scanSandbox, query, args...)
}

// queryPage runs a query of ListSandboxPage's.
func queryPage[T any](ctx context.Context, s *Store, p model.SandboxPage, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	if p.Limit > 0 && s.d.name == postgresDialect.name {
		return sqldb.QueryIndexOrdered(ctx, s.db, what, scan, s.q(query), args...)
	}
	return queryAll(ctx, s, what, scan, query, args...)
}

// sandboxPageQuery is ListSandboxPage's query and its arguments.
func sandboxPageQuery(accountID string, p model.SandboxPage) (string, []any) {
	query := `SELECT ` + sandboxColumns + ` FROM sandboxes WHERE account_id = ? AND status `
	args := []any{accountID}
	if p.ActiveOnly {
		query += `= ?`
		args = append(args, api.StatusActive)
	} else {
		query += `<> ?`
		args = append(args, model.StatusCreating)
	}
	if p.AfterID != "" {
		// A row value: both databases seek the index to the cursor, where
		// the equivalent OR read the account's rows from the newest and
		// filtered out every one before it (Postgres: O(depth) per page).
		query += ` AND (created_at, id) < (?, ?)`
		args = append(args, micros(p.AfterCreated), p.AfterID)
	}
	query += ` ORDER BY created_at DESC, id DESC`
	if p.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, p.Limit)
	}
	return query, args
}

// SandboxesWithStatus implements model.SandboxStore.
func (s *Store) SandboxesWithStatus(ctx context.Context, status string) ([]*model.Sandbox, error) {
	switch status {
	case api.StatusActive:
		return s.querySandboxes(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
			WHERE status = ? AND paused_with = '' ORDER BY created_at, id`, status)
	case api.StatusPaused:
		return s.querySandboxes(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
			WHERE status = ? AND paused_with <> '' ORDER BY created_at, id`, api.StatusActive)
	}
	return s.querySandboxes(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE status = ? ORDER BY created_at, id`, status)
}

// ExpiredSandboxes implements model.SandboxStore.
func (s *Store) ExpiredSandboxes(ctx context.Context, t time.Time) ([]*model.Sandbox, error) {
	return s.querySandboxes(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE status = ? AND paused_with = '' AND expires_at <= ? ORDER BY expires_at, id`, api.StatusActive, micros(t))
}

// UpdateSandbox implements model.SandboxStore. The id, account and
// creation time are immutable; fn's changes to them are ignored.
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*model.Sandbox) error) (*model.Sandbox, error) {
	var sb *model.Sandbox
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		sb, err = scanSandbox(tx.QueryRowContext(ctx, s.q(`SELECT `+sandboxColumns+` FROM sandboxes WHERE id = ?`+s.d.forUpdate), id))
		if err != nil {
			return s.mapErr(err)
		}
		if err := fn(sb); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE sandboxes SET
			label = ?, size = ?, storage_gb = ?, lifetime_minutes = ?, status = ?, destroy_reason = ?,
			expires_at = ?, destroyed_at = ?, driver = ?,
			endpoint_network = ?, endpoint_address = ?, endpoint_token = ?, endpoint_cert = ?,
			paused_with = ?, paused_at = ?, paused_micros = ?, paused_processes = ?, destroying = ?
			WHERE id = ?`),
			sb.Label, sb.Size, sb.StorageGB, sb.LifetimeMinutes, dbStatus(sb), sb.DestroyReason,
			micros(sb.ExpiresAt), nullMicros(sb.DestroyedAt), sb.Driver,
			sb.Endpoint.Network, sb.Endpoint.Address, sb.Endpoint.Token, string(sb.Endpoint.CertPEM),
			dbPausedWith(sb), nullMicros(sb.PausedAt), sb.PausedTotal.Microseconds(), pausedProcesses(sb), dbDestroying(sb),
			id)
		if err != nil {
			return fmt.Errorf("update sandbox: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// DeleteSandbox implements model.SandboxStore.
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	res, err := s.exec(ctx, s.q(`DELETE FROM sandboxes WHERE id = ?`), id)
	if err != nil {
		return fmt.Errorf("delete sandbox: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// CountActiveSandboxes implements model.SandboxStore.
func (s *Store) CountActiveSandboxes(ctx context.Context, accountID string) (int, error) {
	var n int
	var err error
	if accountID == "" {
		err = s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sandboxes WHERE status = ? AND paused_with = ''`), api.StatusActive).Scan(&n)
	} else {
		err = s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM sandboxes WHERE account_id = ? AND status = ? AND paused_with = ''`),
			accountID, api.StatusActive).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count sandboxes: %w", err)
	}
	return n, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// queryAll runs query and scans each row it returns with scan; what
// names the rows in errors ("sandboxes"). No row is an empty slice, not
// nil: every list of the store answers the same way, and a handler that
// writes it as it is answers [] in JSON, never null.
func queryAll[T any](ctx context.Context, s *Store, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	return queryAllIn(ctx, s.db, s, what, scan, query, args...)
}

// queryAllIn is queryAll in q, a transaction or the pool.
func queryAllIn[T any](ctx context.Context, q querier, s *Store, what string, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query %s: %w", what, err)
	}
	return out, nil
}
