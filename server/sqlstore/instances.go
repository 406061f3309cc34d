package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

var _ model.InstanceStore = (*Store)(nil)

// BeatInstance implements model.InstanceStore: one read and one write in
// a transaction, the row locked (only its own server writes it, but a
// statement's retry must not take the lease twice).
func (s *Store) BeatInstance(ctx context.Context, id string, token int64, now, until time.Time) (int64, error) {
	var got int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var cur, aliveUntil int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT token, alive_until FROM server_instances WHERE id = ?`+s.d.forUpdate), id).
			Scan(&cur, &aliveUntil)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// First beat, or the row was removed (ended, forgotten)
			// meanwhile: a new lease.
			got = token + 1
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO server_instances (id, alive_until, token) VALUES (?, ?, ?)`),
				id, micros(until), got)
			return err
		case err != nil:
			return err
		}
		got = cur
		if cur != token || aliveUntil <= micros(now) {
			got = max(cur, token) + 1 // taken again after it ended
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE server_instances SET alive_until = ?, token = ? WHERE id = ?`),
			micros(until), got, id)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record server heartbeat: %w", err)
	}
	return got, nil
}

// EndInstance implements model.InstanceStore.
func (s *Store) EndInstance(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM server_instances WHERE id = ?`), id); err != nil {
		return fmt.Errorf("remove server heartbeat: %w", err)
	}
	return nil
}

// LiveInstances implements model.InstanceStore.
func (s *Store) LiveInstances(ctx context.Context, now time.Time) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, token FROM server_instances WHERE alive_until > ?`), micros(now))
	if err != nil {
		return nil, fmt.Errorf("list live servers: %w", err)
	}
	defer rows.Close()
	live := map[string]int64{}
	for rows.Next() {
		var id string
		var token int64
		if err := rows.Scan(&id, &token); err != nil {
			return nil, fmt.Errorf("list live servers: %w", err)
		}
		live[id] = token
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list live servers: %w", err)
	}
	return live, nil
}

// ForgetInstances implements model.InstanceStore.
func (s *Store) ForgetInstances(ctx context.Context, before time.Time) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM server_instances WHERE alive_until < ?`), micros(before)); err != nil {
		return fmt.Errorf("forget ended servers: %w", err)
	}
	return nil
}
