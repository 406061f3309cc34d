package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/preview"
)

var _ preview.Store = (*Store)(nil)

const previewColumns = `id, account_id, sandbox_id, port, token_hash, created_at, expires_at, revoked_at`

func scanPreview(r rowScanner) (*preview.Record, error) {
	var rec preview.Record
	var created, expires, revoked int64
	if err := r.Scan(&rec.ID, &rec.AccountID, &rec.SandboxID, &rec.Port, &rec.TokenHash, &created, &expires, &revoked); err != nil {
		return nil, err
	}
	rec.CreatedAt, rec.ExpiresAt = fromMicros(created), fromMicros(expires)
	if revoked != 0 {
		rec.RevokedAt = fromMicros(revoked)
	}
	return &rec, nil
}

// CreatePreview implements preview.Store.
func (s *Store) CreatePreview(ctx context.Context, r *preview.Record) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO previews (`+previewColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`),
		r.ID, r.AccountID, r.SandboxID, r.Port, r.TokenHash, micros(r.CreatedAt), micros(r.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert preview: %w", s.mapErr(err))
	}
	return nil
}

// PreviewByTokenHash implements preview.Store.
func (s *Store) PreviewByTokenHash(ctx context.Context, hash string) (*preview.Record, error) {
	rec, err := scanPreview(s.db.QueryRowContext(ctx, s.q(`SELECT `+previewColumns+` FROM previews WHERE token_hash = ?`), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, preview.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("query preview: %w", err)
	}
	return rec, nil
}

func (s *Store) queryPreviews(ctx context.Context, ex execer, query string, args ...any) ([]*preview.Record, error) {
	return queryAllIn(ctx, ex, s, "previews", scanPreview, query, args...)
}

// Previews implements preview.Store.
func (s *Store) Previews(ctx context.Context, accountID, sandboxID string) ([]*preview.Record, error) {
	return s.queryPreviews(ctx, s.pool(), `SELECT `+previewColumns+` FROM previews WHERE account_id = ? AND sandbox_id = ? ORDER BY created_at DESC, id`, accountID, sandboxID)
}

// RevokePreviews implements preview.Store.
func (s *Store) RevokePreviews(ctx context.Context, accountID, sandboxID string, port int, t time.Time) ([]*preview.Record, error) {
	var out []*preview.Record
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rs, err := s.queryPreviews(ctx, tx, `SELECT `+previewColumns+` FROM previews
			WHERE account_id = ? AND sandbox_id = ? AND (port = ? OR ? = 0) AND revoked_at = 0 AND expires_at > ?`+s.d.forUpdate,
			accountID, sandboxID, port, port, micros(t))
		if err != nil {
			return err
		}
		for _, r := range rs {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE previews SET revoked_at = ? WHERE id = ?`), micros(t), r.ID); err != nil {
				return fmt.Errorf("revoke preview: %w", err)
			}
			r.RevokedAt = t
		}
		out = rs
		return nil
	})
	return out, err
}
