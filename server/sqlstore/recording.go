package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.RecordingStore = (*Store)(nil)

// SaveRecording implements model.RecordingStore. The asciicast is JSON
// lines, so it is kept as text.
func (s *Store) SaveRecording(ctx context.Context, r *model.Recording) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO takeover_recordings (id, sandbox_id, account_id, data, truncated, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`), r.ID, r.SandboxID, r.AccountID, string(r.Data), r.Truncated, micros(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert takeover recording: %w", s.mapErr(err))
	}
	return nil
}

// Recording implements model.RecordingStore.
func (s *Store) Recording(ctx context.Context, accountID, sandboxID, id string) (*model.Recording, error) {
	var (
		r       model.Recording
		data    string
		created int64
	)
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, sandbox_id, account_id, data, truncated, created_at FROM takeover_recordings
		WHERE id = ? AND account_id = ? AND sandbox_id = ?`), id, accountID, sandboxID).
		Scan(&r.ID, &r.SandboxID, &r.AccountID, &data, &r.Truncated, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, model.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("query takeover recording: %w", err)
	}
	r.Data, r.CreatedAt = []byte(data), fromMicros(created)
	return &r, nil
}
