package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/boxkite/boxkite/server/e2b"
)

var _ e2b.Store = (*Store)(nil)

const e2bColumns = `sandbox_id, account_id, template_id, metadata, env_vars, created_at`

func scanE2B(r rowScanner) (e2b.Record, error) {
	var rec e2b.Record
	var md, env string
	var created int64
	if err := r.Scan(&rec.SandboxID, &rec.AccountID, &rec.TemplateID, &md, &env, &created); err != nil {
		return rec, err
	}
	if err := json.Unmarshal([]byte(md), &rec.Metadata); err != nil {
		return rec, fmt.Errorf("decode metadata: %w", err)
	}
	if err := json.Unmarshal([]byte(env), &rec.EnvVars); err != nil {
		return rec, fmt.Errorf("decode env vars: %w", err)
	}
	rec.CreatedAt = fromMicros(created)
	return rec, nil
}

// PutE2BSandbox implements e2b.Store: it inserts rec, or replaces the
// record of the same sandbox.
func (s *Store) PutE2BSandbox(ctx context.Context, rec e2b.Record) error {
	md, err := json.Marshal(nonNil(rec.Metadata))
	if err != nil {
		return err
	}
	env, err := json.Marshal(nonNil(rec.EnvVars))
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, s.q(`INSERT INTO e2b_sandboxes (`+e2bColumns+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (sandbox_id) DO UPDATE SET template_id = excluded.template_id, metadata = excluded.metadata, env_vars = excluded.env_vars`),
		rec.SandboxID, rec.AccountID, rec.TemplateID, string(md), string(env), micros(rec.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert e2b sandbox: %w", s.mapErr(err))
	}
	return nil
}

// E2BSandbox implements e2b.Store.
func (s *Store) E2BSandbox(ctx context.Context, sandboxID string) (e2b.Record, error) {
	rec, err := scanE2B(s.db.QueryRowContext(ctx, s.q(`SELECT `+e2bColumns+` FROM e2b_sandboxes WHERE sandbox_id = ?`), sandboxID))
	if errors.Is(err, sql.ErrNoRows) {
		return rec, e2b.ErrNotFound
	}
	if err != nil {
		return rec, fmt.Errorf("query e2b sandbox: %w", err)
	}
	return rec, nil
}

// E2BSandboxes implements e2b.Store.
func (s *Store) E2BSandboxes(ctx context.Context, accountID string) ([]e2b.Record, error) {
	return queryAll(ctx, s, "e2b sandboxes", scanE2B, `SELECT `+e2bColumns+` FROM e2b_sandboxes WHERE account_id = ?`, accountID)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
