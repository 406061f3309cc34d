package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/storagesync"
)

var _ storagesync.Store = (*Store)(nil)

const syncColumns = `sandbox_id, account_id, state, last_flush_at, last_error, last_error_at, attempts, next_attempt_at, retain_until, final_done, created_at`

func fromMicrosOrZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

func scanSync(r rowScanner, extra ...any) (*storagesync.State, error) {
	var st storagesync.State
	var flush, errAt, next, retain, created int64
	var final int
	dest := append([]any{&st.SandboxID, &st.AccountID, &st.State, &flush, &st.LastError, &errAt, &st.Attempts, &next, &retain, &final, &created}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	st.LastFlushAt, st.LastErrorAt, st.NextAttemptAt = fromMicrosOrZero(flush), fromMicrosOrZero(errAt), fromMicrosOrZero(next)
	st.RetainUntil, st.CreatedAt, st.FinalDone = fromMicrosOrZero(retain), fromMicros(created), final != 0
	return &st, nil
}

// StartSync implements storagesync.Store.
func (s *Store) StartSync(ctx context.Context, st *storagesync.State) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO storage_sync (`+syncColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sandbox_id) DO NOTHING`),
		st.SandboxID, st.AccountID, st.State, microsOrZero(st.LastFlushAt), st.LastError, microsOrZero(st.LastErrorAt), st.Attempts,
		microsOrZero(st.NextAttemptAt), microsOrZero(st.RetainUntil), boolInt(st.FinalDone), micros(st.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert storage sync: %w", s.mapErr(err))
	}
	return nil
}

// SyncState implements storagesync.Store.
func (s *Store) SyncState(ctx context.Context, sandboxID string) (*storagesync.State, error) {
	row := s.db.QueryRowContext(ctx, s.q(`SELECT `+syncColumns+`, (SELECT COUNT(*) FROM storage_queue q WHERE q.sandbox_id = storage_sync.sandbox_id) FROM storage_sync WHERE sandbox_id = ?`), sandboxID)
	var pending int
	st, err := scanSync(row, &pending)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storagesync.ErrNoSync
	}
	if err != nil {
		return nil, fmt.Errorf("load storage sync: %w", s.mapErr(err))
	}
	st.Pending = pending
	return st, nil
}

// SyncStates implements storagesync.Store.
func (s *Store) SyncStates(ctx context.Context, state string) ([]*storagesync.State, error) {
	return queryAll(ctx, s, "storage syncs", func(r rowScanner) (*storagesync.State, error) {
		var pending int
		st, err := scanSync(r, &pending)
		if err != nil {
			return nil, err
		}
		st.Pending = pending
		return st, nil
	}, `SELECT `+syncColumns+`, (SELECT COUNT(*) FROM storage_queue q WHERE q.sandbox_id = storage_sync.sandbox_id) FROM storage_sync WHERE state = ? ORDER BY created_at, sandbox_id`, state)
}

// UpdateSyncState implements storagesync.Store.
func (s *Store) UpdateSyncState(ctx context.Context, st *storagesync.State) error {
	res, err := s.exec(ctx, s.q(`UPDATE storage_sync SET state = ?, last_flush_at = ?, last_error = ?, last_error_at = ?, attempts = ?, next_attempt_at = ?, retain_until = ?, final_done = ? WHERE sandbox_id = ?`),
		st.State, microsOrZero(st.LastFlushAt), st.LastError, microsOrZero(st.LastErrorAt), st.Attempts, microsOrZero(st.NextAttemptAt),
		microsOrZero(st.RetainUntil), boolInt(st.FinalDone), st.SandboxID)
	if err != nil {
		return fmt.Errorf("update storage sync: %w", s.mapErr(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return storagesync.ErrNoSync
	}
	return nil
}

// EnqueueSync implements storagesync.Store.
func (s *Store) EnqueueSync(ctx context.Context, sandboxID, path string, at time.Time) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO storage_queue (sandbox_id, path, queued_at) VALUES (?, ?, ?)
		ON CONFLICT (sandbox_id, path) DO UPDATE SET queued_at = excluded.queued_at`), sandboxID, path, micros(at))
	if err != nil {
		return fmt.Errorf("queue storage sync: %w", s.mapErr(err))
	}
	return nil
}

// QueuedSync implements storagesync.Store.
func (s *Store) QueuedSync(ctx context.Context, sandboxID string) ([]string, error) {
	return queryAll(ctx, s, "storage queue", scanString, `SELECT path FROM storage_queue WHERE sandbox_id = ? ORDER BY path`, sandboxID)
}

// DequeueSync implements storagesync.Store.
func (s *Store) DequeueSync(ctx context.Context, sandboxID string, upTo time.Time) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM storage_queue WHERE sandbox_id = ? AND queued_at <= ?`), sandboxID, micros(upTo)); err != nil {
		return fmt.Errorf("dequeue storage sync: %w", s.mapErr(err))
	}
	return nil
}

// SyncedFiles implements storagesync.Store.
func (s *Store) SyncedFiles(ctx context.Context, sandboxID string) (map[string]storagesync.Synced, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT path, size, mtime_ns, synced_at FROM storage_files WHERE sandbox_id = ?`), sandboxID)
	if err != nil {
		return nil, fmt.Errorf("query stored files: %w", s.mapErr(err))
	}
	defer rows.Close()
	out := map[string]storagesync.Synced{}
	for rows.Next() {
		var f storagesync.Synced
		var at int64
		if err := rows.Scan(&f.Path, &f.Size, &f.MtimeNS, &at); err != nil {
			return nil, fmt.Errorf("scan stored file: %w", err)
		}
		f.SyncedAt = fromMicros(at)
		out[f.Path] = f
	}
	return out, rows.Err()
}

// PutSynced implements storagesync.Store.
func (s *Store) PutSynced(ctx context.Context, sandboxID string, files []storagesync.Synced) error {
	if len(files) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO storage_files (sandbox_id, path, size, mtime_ns, synced_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (sandbox_id, path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, synced_at = excluded.synced_at`))
		if err != nil {
			return fmt.Errorf("record stored files: %w", s.mapErr(err))
		}
		defer stmt.Close()
		for _, f := range files {
			if _, err := stmt.ExecContext(ctx, sandboxID, f.Path, f.Size, f.MtimeNS, micros(f.SyncedAt)); err != nil {
				return fmt.Errorf("record stored file: %w", s.mapErr(err))
			}
		}
		return nil
	})
}

// DeleteSynced implements storagesync.Store. One path, the common case (a
// file removed between two flushes), is one statement: a round trip on
// Postgres, where the transaction the loop needs takes four.
func (s *Store) DeleteSynced(ctx context.Context, sandboxID string, paths ...string) error {
	switch len(paths) {
	case 0:
		return nil
	case 1:
		if _, err := s.exec(ctx, s.q(forgetSynced), sandboxID, paths[0]); err != nil {
			return fmt.Errorf("forget stored file: %w", s.mapErr(err))
		}
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, s.q(forgetSynced))
		if err != nil {
			return fmt.Errorf("forget stored files: %w", s.mapErr(err))
		}
		defer stmt.Close()
		for _, p := range paths {
			if _, err := stmt.ExecContext(ctx, sandboxID, p); err != nil {
				return fmt.Errorf("forget stored file: %w", s.mapErr(err))
			}
		}
		return nil
	})
}

// forgetSynced forgets one stored file of a sandbox.
const forgetSynced = `DELETE FROM storage_files WHERE sandbox_id = ? AND path = ?`

// ClearSynced implements storagesync.Store.
func (s *Store) ClearSynced(ctx context.Context, sandboxID string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM storage_files WHERE sandbox_id = ?`), sandboxID); err != nil {
			return fmt.Errorf("forget stored files: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM storage_queue WHERE sandbox_id = ?`), sandboxID); err != nil {
			return fmt.Errorf("clear storage queue: %w", err)
		}
		return nil
	})
}
