package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

const keyColumns = `k.id, k.account_id, k.name, k.key_hash, k.prefix, k.role, k.created_at, k.revoked_at, k.last_used_at, k.member_id, k.expires_at, k.demotions`

// rowScanner is a row to scan (sqldb's, so that a scan serves
// sqldb.QueryIndexOrdered too).
type rowScanner = sqldb.Scanner

// querier is what queryAllIn runs its query in: the pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanString scans a row of one text column.
func scanString(r rowScanner) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}

func scanKey(r rowScanner, extra ...any) (*model.APIKey, error) {
	var k model.APIKey
	var created int64
	var revoked, used, expires sql.NullInt64
	dest := append([]any{&k.ID, &k.AccountID, &k.Name, &k.Hash, &k.Prefix, &k.Role, &created, &revoked, &used, &k.MemberID, &expires, &k.Demotions}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMicros(created)
	k.RevokedAt = fromNullMicros(revoked)
	k.LastUsedAt = fromNullMicros(used)
	k.ExpiresAt = fromNullMicros(expires)
	return &k, nil
}

// keyLookupQuery is APIKeyByHash's query.
const keyLookupQuery = `SELECT ` + keyColumns + `, a.id, a.email, a.created_at, a.keep_output_secrets,
		o.name, o.max_concurrent_sandboxes, o.monthly_sandbox_hours, m.role
		FROM api_keys k JOIN accounts a ON a.id = k.account_id
		LEFT JOIN organizations o ON o.id = k.account_id
		LEFT JOIN organization_members m ON m.org_id = k.account_id AND m.account_id = k.member_id
		WHERE k.key_hash = ?`

// APIKeyByHash implements model.AccountStore. For a key of an
// organization it also loads the organization and its holder's current
// role there (none when they are no longer a member), in the same query,
// so that a removed member's key is refused at its next use. On SQLite the
// answer is cached until any change to the database but an audit append
// (sqldb.Generation).
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*model.APIKey, *model.Account, error) {
	if s.cache == nil {
		return s.apiKeyByHash(ctx, hash)
	}
	if ka, ok := s.cache.keys.Get(hash); ok {
		return ka.key, ka.acct, nil
	}
	n := s.cache.keys.ReadGen()
	k, a, err := s.apiKeyByHash(ctx, hash)
	if err == nil {
		s.cache.keys.Put(n, hash, keyAccount{k, a})
	}
	return k, a, err
}

func (s *Store) apiKeyByHash(ctx context.Context, hash string) (*model.APIKey, *model.Account, error) {
	var a model.Account
	var created int64
	var keep int64
	var orgName, memberRole sql.NullString
	var maxConc sql.NullInt64
	var hours sql.NullFloat64
	row := s.queryRowCached(ctx, keyLookupQuery, hash)
	k, err := scanKey(row, &a.ID, &a.Email, &created, &keep, &orgName, &maxConc, &hours, &memberRole)
	if err != nil {
		return nil, nil, s.mapErr(err)
	}
	a.CreatedAt, a.KeepOutputSecrets = fromMicros(created), keep != 0
	if orgName.Valid {
		a.Org = &model.Org{Name: orgName.String, MaxConcurrentSandboxes: int(maxConc.Int64), MonthlySandboxHours: hours.Float64}
	}
	k.MemberRole = memberRole.String
	return k, &a, nil
}

// CreateAccount implements model.AccountStore.
func (s *Store) CreateAccount(ctx context.Context, a *model.Account) error {
	return s.createAccount(ctx, s.pool(), a)
}

// execer is what *sql.DB and *sql.Tx share.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) createAccount(ctx context.Context, ex execer, a *model.Account) error {
	_, err := ex.ExecContext(ctx, s.q(`INSERT INTO accounts (id, email, created_at) VALUES (?, ?, ?)`),
		a.ID, a.Email, micros(a.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert account: %w", s.mapErr(err))
	}
	return nil
}

// AccountByEmail implements model.AccountStore.
func (s *Store) AccountByEmail(ctx context.Context, email string) (*model.Account, error) {
	return s.accountByEmail(ctx, s.pool(), email)
}

func (s *Store) accountByEmail(ctx context.Context, ex execer, email string) (*model.Account, error) {
	var a model.Account
	var created int64
	var keep int64
	err := ex.QueryRowContext(ctx, s.q(`SELECT id, email, created_at, keep_output_secrets FROM accounts WHERE email = ?`), email).
		Scan(&a.ID, &a.Email, &created, &keep)
	if err != nil {
		return nil, s.mapErr(err)
	}
	a.CreatedAt, a.KeepOutputSecrets = fromMicros(created), keep != 0
	return &a, nil
}

// CreateAPIKey implements model.AccountStore.
func (s *Store) CreateAPIKey(ctx context.Context, k *model.APIKey) error {
	return s.createKey(ctx, s.pool(), k)
}

func (s *Store) createKey(ctx context.Context, ex execer, k *model.APIKey) error {
	_, err := ex.ExecContext(ctx, s.q(`INSERT INTO api_keys
		(id, account_id, name, key_hash, prefix, role, created_at, revoked_at, last_used_at, member_id, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.AccountID, k.Name, k.Hash, k.Prefix, k.Role, micros(k.CreatedAt), nullMicros(k.RevokedAt), nullMicros(k.LastUsedAt), k.MemberID,
		nullMicros(k.ExpiresAt))
	if err != nil {
		return fmt.Errorf("insert api key: %w", s.mapErr(err))
	}
	return nil
}

// EnsureAccountKey implements model.AccountStore.
func (s *Store) EnsureAccountKey(ctx context.Context, a *model.Account, k *model.APIKey) (*model.Account, *model.APIKey, error) {
	var gotA *model.Account
	var gotK *model.APIKey
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		gotA, err = s.accountByEmail(ctx, tx, a.Email)
		if errors.Is(err, model.ErrNotFound) {
			if err := s.createAccount(ctx, tx, a); err != nil {
				return err
			}
			gotA = a
		} else if err != nil {
			return fmt.Errorf("look up account: %w", err)
		}
		gotK, err = scanKey(tx.QueryRowContext(ctx, s.q(`SELECT `+keyColumns+` FROM api_keys k WHERE k.key_hash = ?`), k.Hash))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			nk := *k
			nk.AccountID = gotA.ID
			if err := s.createKey(ctx, tx, &nk); err != nil {
				return err
			}
			gotK = &nk
		case err != nil:
			return fmt.Errorf("look up api key: %w", err)
		case gotK.AccountID != gotA.ID:
			return fmt.Errorf("api key belongs to another account: %w", model.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return gotA, gotK, nil
}

// RevokeAPIKey implements model.AccountStore.
func (s *Store) RevokeAPIKey(ctx context.Context, accountID, keyID string, t time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ?
			WHERE id = ? AND account_id = ? AND revoked_at IS NULL`), micros(t), keyID, accountID)
		if err != nil {
			return fmt.Errorf("revoke api key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.ErrNotFound
		}
		return s.notifyRevoked(ctx, tx, keyID)
	})
}

// TouchAPIKey implements model.AccountStore.
func (s *Store) TouchAPIKey(ctx context.Context, keyID string, t time.Time) error {
	if _, err := s.exec(ctx, s.q(`UPDATE api_keys SET last_used_at = ? WHERE id = ?`), micros(t), keyID); err != nil {
		return fmt.Errorf("touch api key: %w", err)
	}
	return nil
}
