package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

var _ model.AllowlistStore = (*Store)(nil)

// AllowedCommands implements model.AllowlistStore. It runs on every exec,
// so it goes through a cached prepared statement.
func (s *Store) AllowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error) {
	var raw string
	err := s.queryRowCached(ctx, `SELECT rules FROM allowed_commands WHERE account_id = ?`, accountID).Scan(&raw)
	if errors.Is(s.mapErr(err), model.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read allowed commands: %w", err)
	}
	var rules []api.CommandRule
	if err := json.Unmarshal([]byte(raw), &rules); err != nil {
		return nil, fmt.Errorf("decode allowed commands: %w", err)
	}
	return rules, nil
}

// SetAllowedCommands implements model.AllowlistStore.
func (s *Store) SetAllowedCommands(ctx context.Context, accountID string, rules []api.CommandRule, t time.Time) error {
	if len(rules) == 0 {
		if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM allowed_commands WHERE account_id = ?`), accountID); err != nil {
			return fmt.Errorf("clear allowed commands: %w", err)
		}
		return nil
	}
	raw, err := json.Marshal(rules)
	if err != nil {
		return fmt.Errorf("encode allowed commands: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO allowed_commands (account_id, rules, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at`),
		accountID, string(raw), micros(t))
	if err != nil {
		return fmt.Errorf("store allowed commands: %w", s.mapErr(err))
	}
	return nil
}
