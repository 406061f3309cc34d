package sqlstore

import (
	"context"

	"github.com/boxkite/boxkite/server/model"
)

// SandboxPagePlanForTests is the plan (EXPLAIN) of ListSandboxPage's query,
// run the way ListSandboxPage runs it.
func (s *Store) SandboxPagePlanForTests(ctx context.Context, accountID string, p model.SandboxPage) ([]string, error) {
	query, args := sandboxPageQuery(accountID, p)
	return queryPage(ctx, s, p, "plan", func(r rowScanner) (string, error) {
		var line string
		err := r.Scan(&line)
		return line, err
	}, "EXPLAIN "+query, args...)
}

// SetDropCheckedForTests sets fn to run in BeginSnapshotDrop's transaction
// once it found its key unused, before it records the drop.
func (s *Store) SetDropCheckedForTests(fn func()) { s.dropChecked = fn }

// Prepared is the statements a SQLite store's connections have prepared
// (0 on Postgres).
func (s *Store) Prepared() uint64 {
	if s.gen == nil {
		return 0
	}
	return s.gen.Prepared()
}
