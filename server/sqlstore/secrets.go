package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/secrets"
)

var _ secrets.Store = (*Store)(nil)

const secretColumns = `id, account_id, name, allowed_hosts, trust_tier, key_id, wrapped_key, ciphertext, created_at, updated_at, last_used_at`

var b64 = base64.StdEncoding

func scanSecret(r rowScanner) (*secrets.Record, error) {
	var rec secrets.Record
	var hosts, wrapped, ct string
	var created, updated, used int64
	if err := r.Scan(&rec.ID, &rec.AccountID, &rec.Name, &hosts, &rec.TrustTier, &rec.KeyID, &wrapped, &ct, &created, &updated, &used); err != nil {
		return nil, err
	}
	var err error
	if rec.WrappedKey, err = b64.DecodeString(wrapped); err != nil {
		return nil, fmt.Errorf("decode wrapped key: %w", err)
	}
	if rec.Ciphertext, err = b64.DecodeString(ct); err != nil {
		return nil, fmt.Errorf("decode ciphertext: %w", err)
	}
	rec.AllowedHosts = strings.Fields(hosts)
	rec.CreatedAt, rec.UpdatedAt = fromMicros(created), fromMicros(updated)
	if used != 0 {
		rec.LastUsedAt = fromMicros(used)
	}
	return &rec, nil
}

// CreateSecret implements secrets.Store. The account's row is locked (on
// Postgres; SQLite serialises writers) so two creates cannot both pass
// the count.
func (s *Store) CreateSecret(ctx context.Context, r *secrets.Record, limit int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var id string
		if err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM accounts WHERE id = ?`+s.d.forUpdate), r.AccountID).Scan(&id); err != nil {
			return fmt.Errorf("lock account: %w", s.mapErr(err))
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM secrets WHERE account_id = ?`), r.AccountID).Scan(&n); err != nil {
			return fmt.Errorf("count secrets: %w", err)
		}
		if n >= limit {
			return secrets.ErrLimit
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO secrets (`+secretColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`),
			r.ID, r.AccountID, r.Name, strings.Join(r.AllowedHosts, " "), r.TrustTier, r.KeyID,
			b64.EncodeToString(r.WrappedKey), b64.EncodeToString(r.Ciphertext), micros(r.CreatedAt), micros(r.UpdatedAt))
		if err := s.mapErr(err); errors.Is(err, model.ErrConflict) {
			return secrets.ErrNameTaken
		} else if err != nil {
			return fmt.Errorf("insert secret: %w", err)
		}
		return nil
	})
}

func (s *Store) querySecrets(ctx context.Context, query string, args ...any) ([]*secrets.Record, error) {
	return queryAll(ctx, s, "secrets", scanSecret, query, args...)
}

// Secrets implements secrets.Store.
func (s *Store) Secrets(ctx context.Context, accountID string) ([]*secrets.Record, error) {
	return s.querySecrets(ctx, `SELECT `+secretColumns+` FROM secrets WHERE account_id = ? ORDER BY name`, accountID)
}

// AllSecrets implements secrets.Store.
func (s *Store) AllSecrets(ctx context.Context) ([]*secrets.Record, error) {
	return s.querySecrets(ctx, `SELECT `+secretColumns+` FROM secrets ORDER BY id`)
}

// UpdateSecret implements secrets.Store.
func (s *Store) UpdateSecret(ctx context.Context, r *secrets.Record) error {
	res, err := s.exec(ctx, s.q(`UPDATE secrets SET allowed_hosts = ?, key_id = ?, wrapped_key = ?, ciphertext = ?, updated_at = ?
		WHERE id = ? AND account_id = ?`),
		strings.Join(r.AllowedHosts, " "), r.KeyID, b64.EncodeToString(r.WrappedKey), b64.EncodeToString(r.Ciphertext), micros(r.UpdatedAt),
		r.ID, r.AccountID)
	return affected(res, err, "update secret", secrets.ErrNotFound)
}

// DeleteSecret implements secrets.Store.
func (s *Store) DeleteSecret(ctx context.Context, accountID, id string) error {
	res, err := s.exec(ctx, s.q(`DELETE FROM secrets WHERE id = ? AND account_id = ?`), id, accountID)
	return affected(res, err, "delete secret", secrets.ErrNotFound)
}

// RewrapSecret implements secrets.Store.
func (s *Store) RewrapSecret(ctx context.Context, id, oldKeyID, keyID string, wrapped []byte) error {
	res, err := s.exec(ctx, s.q(`UPDATE secrets SET key_id = ?, wrapped_key = ? WHERE id = ? AND key_id = ?`),
		keyID, b64.EncodeToString(wrapped), id, oldKeyID)
	return affected(res, err, "rewrap secret", secrets.ErrChanged)
}

// TouchSecrets implements secrets.Store.
func (s *Store) TouchSecrets(ctx context.Context, accountID string, names []string, t time.Time) error {
	for _, n := range names {
		if _, err := s.exec(ctx, s.q(`UPDATE secrets SET last_used_at = ? WHERE account_id = ? AND name = ?`),
			micros(t), accountID, n); err != nil {
			return fmt.Errorf("touch secret: %w", err)
		}
	}
	return nil
}

// GrantSecrets implements secrets.Store. Each grant names the secret
// the sandbox's account holds under that name now (by id), so that one
// deleted and created again is not granted again; a name the account
// holds no secret of is not granted.
func (s *Store) GrantSecrets(ctx context.Context, sandboxID string, names []string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, n := range names {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sandbox_secrets (sandbox_id, name, secret_id)
				SELECT b.id, s.name, s.id FROM sandboxes b JOIN secrets s ON s.account_id = b.account_id
				WHERE b.id = ? AND s.name = ? ON CONFLICT DO NOTHING`),
				sandboxID, n); err != nil {
				return fmt.Errorf("grant secret: %w", err)
			}
		}
		return nil
	})
}

// SandboxSecretGrants implements secrets.Store.
func (s *Store) SandboxSecretGrants(ctx context.Context, sandboxID string) ([]model.SecretGrant, error) {
	return queryAll(ctx, s, "sandbox secrets", func(r rowScanner) (model.SecretGrant, error) {
		var g model.SecretGrant
		err := r.Scan(&g.Name, &g.SecretID)
		return g, err
	}, `SELECT g.name, g.secret_id FROM sandbox_secrets g JOIN secrets s ON s.id = g.secret_id
		WHERE g.sandbox_id = ? ORDER BY g.name`, sandboxID)
}

// InheritSecrets implements secrets.Store: each grant is made only when
// its secret exists under the grant's name and is of the sandbox's own
// account (the join), so a fork or restore never holds another account's
// secret.
func (s *Store) InheritSecrets(ctx context.Context, sandboxID string, grants []model.SecretGrant) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, g := range grants {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sandbox_secrets (sandbox_id, name, secret_id)
				SELECT b.id, s.name, s.id FROM sandboxes b JOIN secrets s ON s.account_id = b.account_id
				WHERE b.id = ? AND s.id = ? AND s.name = ? ON CONFLICT DO NOTHING`),
				sandboxID, g.SecretID, g.Name); err != nil {
				return fmt.Errorf("inherit secret grant: %w", err)
			}
		}
		return nil
	})
}

// SandboxSecretNames implements secrets.Store: the names of the secrets
// granted that still exist (a grant outlives its secret, not matching
// any other).
func (s *Store) SandboxSecretNames(ctx context.Context, sandboxID string) ([]string, error) {
	return queryAll(ctx, s, "sandbox secrets", scanString, `SELECT g.name FROM sandbox_secrets g JOIN secrets s ON s.id = g.secret_id
		WHERE g.sandbox_id = ? ORDER BY g.name`, sandboxID)
}

// affected turns an UPDATE or DELETE's result into none when it changed
// a row and none (wrapped as what) when it changed nothing.
func affected(res sql.Result, err error, what string, none error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%s: %w", what, none)
	}
	return nil
}
