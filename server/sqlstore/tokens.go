package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.TokenStore = (*Store)(nil)

// SpendToken implements model.TokenStore. The primary key makes the
// insert the compare-and-set: of two servers spending one token at once,
// exactly one inserts the row.
func (s *Store) SpendToken(ctx context.Context, jti string, expires, now time.Time) (bool, error) {
	if _, err := s.exec(ctx, s.q(`DELETE FROM spent_tokens WHERE expires_at < ?`), micros(now)); err != nil {
		return false, fmt.Errorf("forget expired tokens: %w", err)
	}
	_, err := s.exec(ctx, s.q(`INSERT INTO spent_tokens (jti, expires_at) VALUES (?, ?)`), jti, micros(expires))
	switch err = s.mapErr(err); {
	case err == nil:
		return true, nil
	case errors.Is(err, model.ErrConflict):
		return false, nil
	}
	return false, fmt.Errorf("insert spent token: %w", err)
}
