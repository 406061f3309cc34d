package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.IdempotencyStore = (*Store)(nil)

// claimRetries bounds retries of a claim that lost an insert race; SQLite
// never loses one (writers are serialised), Postgres can.
const claimRetries = 3

const idemScope = `credential = ? AND method = ? AND path = ? AND idem_key = ?`

func idemScopeArgs(rec *model.IdempotencyRecord) []any {
	return []any{rec.Credential, rec.Method, rec.Path, rec.Key}
}

// ClaimIdempotencyKey implements model.IdempotencyStore.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord, staleBefore time.Time) (*model.IdempotencyRecord, error) {
	var existing *model.IdempotencyRecord
	var err error
	for range claimRetries {
		existing = nil
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			old, err := s.idempotencyRecord(ctx, tx, rec)
			switch {
			case errors.Is(err, model.ErrNotFound):
			case err != nil:
				return err
			case !old.ExpiresAt.After(rec.CreatedAt),
				old.State == model.IdempotencyInProgress && old.CreatedAt.Before(staleBefore):
				if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM idempotency_keys WHERE `+idemScope), idemScopeArgs(rec)...); err != nil {
					return fmt.Errorf("delete dead idempotency key: %w", err)
				}
			default:
				existing = old
				return nil
			}
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO idempotency_keys
				(credential, method, path, idem_key, request_hash, state, status, content_type, body, created_at, expires_at)
				VALUES (?, ?, ?, ?, ?, ?, 0, '', '', ?, ?)`),
				rec.Credential, rec.Method, rec.Path, rec.Key, rec.RequestHash, model.IdempotencyInProgress,
				micros(rec.CreatedAt), micros(rec.ExpiresAt))
			if err != nil {
				return fmt.Errorf("insert idempotency key: %w", s.mapErr(err))
			}
			return nil
		})
		if !errors.Is(err, model.ErrConflict) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return existing, nil
}

func (s *Store) idempotencyRecord(ctx context.Context, ex execer, scope *model.IdempotencyRecord) (*model.IdempotencyRecord, error) {
	rec := model.IdempotencyRecord{Credential: scope.Credential, Method: scope.Method, Path: scope.Path, Key: scope.Key}
	var body string
	var created, expires int64
	err := ex.QueryRowContext(ctx, s.q(`SELECT request_hash, state, status, content_type, body, created_at, expires_at
		FROM idempotency_keys WHERE `+idemScope), idemScopeArgs(scope)...).
		Scan(&rec.RequestHash, &rec.State, &rec.Status, &rec.ContentType, &body, &created, &expires)
	if err != nil {
		return nil, s.mapErr(err)
	}
	rec.CreatedAt, rec.ExpiresAt = fromMicros(created), fromMicros(expires)
	if rec.Body, err = base64.StdEncoding.DecodeString(body); err != nil {
		return nil, fmt.Errorf("decode idempotency record body: %w", err)
	}
	return &rec, nil
}

// CompleteIdempotencyKey implements model.IdempotencyStore.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord) error {
	args := append([]any{
		model.IdempotencyCompleted, rec.Status, rec.ContentType,
		base64.StdEncoding.EncodeToString(rec.Body), micros(rec.ExpiresAt),
	}, idemScopeArgs(rec)...)
	res, err := s.exec(ctx, s.q(`UPDATE idempotency_keys
		SET state = ?, status = ?, content_type = ?, body = ?, expires_at = ? WHERE `+idemScope), args...)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// ReleaseIdempotencyKey implements model.IdempotencyStore.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, rec *model.IdempotencyRecord) error {
	args := append(idemScopeArgs(rec), model.IdempotencyInProgress)
	if _, err := s.exec(ctx, s.q(`DELETE FROM idempotency_keys WHERE `+idemScope+` AND state = ?`), args...); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys implements model.IdempotencyStore.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, t time.Time) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM idempotency_keys WHERE expires_at <= ?`), micros(t)); err != nil {
		return fmt.Errorf("purge idempotency keys: %w", err)
	}
	return nil
}
