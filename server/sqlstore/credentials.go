package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.CredentialStore = (*Store)(nil)

// AccountByID implements model.CredentialStore.
func (s *Store) AccountByID(ctx context.Context, id string) (*model.Account, error) {
	var a model.Account
	var created int64
	var keep int64
	err := s.queryRowCached(ctx, `SELECT id, email, created_at, keep_output_secrets FROM accounts WHERE id = ?`, id).
		Scan(&a.ID, &a.Email, &created, &keep)
	if err != nil {
		return nil, s.mapErr(err)
	}
	a.CreatedAt, a.KeepOutputSecrets = fromMicros(created), keep != 0
	return &a, nil
}

// RevokedCredentials implements model.CredentialStore.
func (s *Store) RevokedCredentials(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, 0, 2*len(ids)+1)
	args = append(args, micros(now))
	for range 2 {
		for _, id := range ids {
			args = append(args, id)
		}
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id FROM api_keys
		WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) AND id IN (`+in+`)
		UNION SELECT id FROM ssh_keys WHERE id IN (`+in+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("query credentials: %w", err)
	}
	defer rows.Close()
	valid := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("scan credential: %w", err)
		}
		valid[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query credentials: %w", err)
	}
	var gone []string
	for _, id := range ids {
		if !valid[id] {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// SetKeepOutputSecrets implements model.CredentialStore.
func (s *Store) SetKeepOutputSecrets(ctx context.Context, accountID string, keep bool) error {
	v := 0
	if keep {
		v = 1
	}
	res, err := s.exec(ctx, s.q(`UPDATE accounts SET keep_output_secrets = ? WHERE id = ?`), v, accountID)
	if err != nil {
		return fmt.Errorf("update account: %w", s.mapErr(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return model.ErrNotFound
	}
	return nil
}

// CreateAccountWithPassword implements model.CredentialStore.
func (s *Store) CreateAccountWithPassword(ctx context.Context, a *model.Account, passwordHash string) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO accounts (id, email, created_at, password_hash) VALUES (?, ?, ?, ?)`),
		a.ID, a.Email, micros(a.CreatedAt), passwordHash)
	if err != nil {
		return fmt.Errorf("insert account: %w", s.mapErr(err))
	}
	return nil
}

// PasswordHash implements model.CredentialStore.
func (s *Store) PasswordHash(ctx context.Context, email string) (*model.Account, string, error) {
	var a model.Account
	var created int64
	var hash string
	var keep int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, email, created_at, password_hash, keep_output_secrets FROM accounts WHERE email = ?`), email).
		Scan(&a.ID, &a.Email, &created, &hash, &keep)
	if err != nil {
		return nil, "", s.mapErr(err)
	}
	a.CreatedAt, a.KeepOutputSecrets = fromMicros(created), keep != 0
	return &a, hash, nil
}

// APIKeyRole implements model.CredentialStore.
func (s *Store) APIKeyRole(ctx context.Context, id string, now time.Time) (string, int64, error) {
	var role, member string
	var demotions int64
	var memberRole sql.NullString
	err := s.db.QueryRowContext(ctx, s.q(`SELECT k.role, k.member_id, k.demotions, m.role FROM api_keys k
		LEFT JOIN organization_members m ON m.org_id = k.account_id AND m.account_id = k.member_id
		WHERE k.id = ? AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)`), id, micros(now)).Scan(&role, &member, &demotions, &memberRole)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("query key role: %w", err)
	}
	if member == "" {
		return role, demotions, nil
	}
	return model.EffectiveKeyRole(role, memberRole.String), demotions, nil
}

// KeyDemotions implements model.CredentialStore.
func (s *Store) KeyDemotions(ctx context.Context, ids []string) (map[string]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, demotions FROM api_keys WHERE demotions > 0 AND id IN (`+in+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("query demotions: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("scan demotions: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query demotions: %w", err)
	}
	return out, nil
}

// ListAPIKeys implements model.CredentialStore.
func (s *Store) ListAPIKeys(ctx context.Context, accountID string) ([]*model.APIKey, error) {
	return queryAll(ctx, s, "api keys", func(r rowScanner) (*model.APIKey, error) { return scanKey(r) },
		`SELECT `+keyColumns+` FROM api_keys k WHERE k.account_id = ? ORDER BY k.created_at DESC, k.id DESC`, accountID)
}

// EnsureSetting implements model.CredentialStore.
func (s *Store) EnsureSetting(ctx context.Context, name, value string) (string, error) {
	if _, err := s.exec(ctx, s.q(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`),
		name, value); err != nil {
		return "", fmt.Errorf("store setting %s: %w", name, err)
	}
	var got string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = ?`), name).Scan(&got); err != nil {
		return "", fmt.Errorf("read setting %s: %w", name, err)
	}
	return got, nil
}

var _ model.SSHKeyStore = (*Store)(nil)

const sshKeyColumns = `id, account_id, name, public_key, fingerprint, created_at, member_id`

// CreateSSHKey implements model.SSHKeyStore.
func (s *Store) CreateSSHKey(ctx context.Context, k *model.SSHKey) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO ssh_keys (`+sshKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.AccountID, k.Name, k.PublicKey, k.Fingerprint, micros(k.CreatedAt), k.MemberID)
	if err != nil {
		return fmt.Errorf("insert ssh key: %w", s.mapErr(err))
	}
	return nil
}

// ListSSHKeys implements model.SSHKeyStore.
func (s *Store) ListSSHKeys(ctx context.Context, accountID string) ([]*model.SSHKey, error) {
	return queryAll(ctx, s, "ssh keys", scanSSHKey, `SELECT `+sshKeyColumns+` FROM ssh_keys
		WHERE account_id = ? ORDER BY created_at, id`, accountID)
}

func scanSSHKey(r rowScanner) (*model.SSHKey, error) {
	var k model.SSHKey
	var created int64
	if err := r.Scan(&k.ID, &k.AccountID, &k.Name, &k.PublicKey, &k.Fingerprint, &created, &k.MemberID); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMicros(created)
	return &k, nil
}

// SSHKeyByFingerprint implements model.SSHKeyStore.
func (s *Store) SSHKeyByFingerprint(ctx context.Context, fingerprint string) (*model.SSHKey, error) {
	k, err := scanSSHKey(s.db.QueryRowContext(ctx, s.q(`SELECT `+sshKeyColumns+` FROM ssh_keys WHERE fingerprint = ?`), fingerprint))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, model.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up ssh key: %w", err)
	}
	return k, nil
}

// DeleteSSHKey implements model.SSHKeyStore.
func (s *Store) DeleteSSHKey(ctx context.Context, accountID, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM ssh_keys WHERE id = ? AND account_id = ?`), id, accountID)
		if err != nil {
			return fmt.Errorf("delete ssh key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return model.ErrNotFound
		}
		return s.notifyRevoked(ctx, tx, id)
	})
}
