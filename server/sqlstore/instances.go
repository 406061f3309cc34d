package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.InstanceStore = (*Store)(nil)

// BeatInstance implements model.InstanceStore: one upsert.
func (s *Store) BeatInstance(ctx context.Context, id string, until time.Time) error {
	if _, err := s.exec(ctx, s.q(`INSERT INTO server_instances (id, alive_until) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET alive_until = excluded.alive_until`), id, micros(until)); err != nil {
		return fmt.Errorf("record server heartbeat: %w", err)
	}
	return nil
}

// EndInstance implements model.InstanceStore.
func (s *Store) EndInstance(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM server_instances WHERE id = ?`), id); err != nil {
		return fmt.Errorf("remove server heartbeat: %w", err)
	}
	return nil
}

// LiveInstances implements model.InstanceStore.
func (s *Store) LiveInstances(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id FROM server_instances WHERE alive_until > ? ORDER BY id`), micros(now))
	if err != nil {
		return nil, fmt.Errorf("list live servers: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list live servers: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list live servers: %w", err)
	}
	return ids, nil
}

// ForgetInstances implements model.InstanceStore.
func (s *Store) ForgetInstances(ctx context.Context, before time.Time) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM server_instances WHERE alive_until < ?`), micros(before)); err != nil {
		return fmt.Errorf("forget ended servers: %w", err)
	}
	return nil
}
