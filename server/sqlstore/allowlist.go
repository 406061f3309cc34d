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

// allowlistQuery is AllowedCommands' query.
const allowlistQuery = `SELECT rules FROM allowed_commands WHERE account_id = ?`

// AllowedCommands implements model.AllowlistStore. It runs on every exec,
// so it goes through a cached prepared statement, and on SQLite its answer
// (none included) is cached until any change to the database but an
// exec's own writes (sqldb.Generation).
func (s *Store) AllowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error) {
	if s.cache == nil {
		return s.allowedCommands(ctx, accountID)
	}
	if rules, ok := s.cache.allowlists.Get(accountID); ok {
		return rules, nil
	}
	n := s.cache.allowlists.ReadGen()
	rules, err := s.allowedCommands(ctx, accountID)
	if err == nil {
		s.cache.allowlists.Put(n, accountID, rules)
	}
	return rules, err
}

func (s *Store) allowedCommands(ctx context.Context, accountID string) ([]api.CommandRule, error) {
	var raw string
	err := s.queryRowCached(ctx, allowlistQuery, accountID).Scan(&raw)
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
		if _, err := s.exec(ctx, s.q(`DELETE FROM allowed_commands WHERE account_id = ?`), accountID); err != nil {
			return fmt.Errorf("clear allowed commands: %w", err)
		}
		return nil
	}
	raw, err := json.Marshal(rules)
	if err != nil {
		return fmt.Errorf("encode allowed commands: %w", err)
	}
	_, err = s.exec(ctx, s.q(`INSERT INTO allowed_commands (account_id, rules, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (account_id) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at`),
		accountID, string(raw), micros(t))
	if err != nil {
		return fmt.Errorf("store allowed commands: %w", s.mapErr(err))
	}
	return nil
}
