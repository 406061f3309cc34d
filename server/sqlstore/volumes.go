package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

var _ model.VolumeStore = (*Store)(nil)

const volumeColumns = `id, account_id, label, size_gb, status, created_at`

func scanVolume(r rowScanner) (*model.Volume, error) {
	var v model.Volume
	var created int64
	if err := r.Scan(&v.ID, &v.AccountID, &v.Label, &v.SizeGB, &v.Status, &created); err != nil {
		return nil, err
	}
	v.CreatedAt = fromMicros(created)
	return &v, nil
}

// CreateVolume implements model.VolumeStore.
func (s *Store) CreateVolume(ctx context.Context, v *model.Volume) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO volumes (`+volumeColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		v.ID, v.AccountID, v.Label, v.SizeGB, v.Status, micros(v.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert volume: %w", s.mapErr(err))
	}
	return nil
}

// Volume implements model.VolumeStore.
func (s *Store) Volume(ctx context.Context, accountID, id string) (*model.Volume, error) {
	row := s.db.QueryRowContext(ctx, s.q(`SELECT `+volumeColumns+` FROM volumes WHERE id = ? AND account_id = ?`), id, accountID)
	v, err := scanVolume(row)
	if err != nil {
		return nil, fmt.Errorf("read volume: %w", s.mapErr(err))
	}
	return v, nil
}

// ListVolumes implements model.VolumeStore.
func (s *Store) ListVolumes(ctx context.Context, accountID string) ([]*model.Volume, error) {
	return queryAll(ctx, s, "volumes", scanVolume, `SELECT `+volumeColumns+` FROM volumes WHERE account_id = ? ORDER BY created_at DESC, id`, accountID)
}

// DeleteVolume implements model.VolumeStore. The check and the delete
// share a transaction; AttachVolumes inserts only for an existing volume,
// so a create racing a delete either sees the volume gone or blocks it.
func (s *Store) DeleteVolume(ctx context.Context, accountID, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(`SELECT sb.id FROM sandbox_volumes sv JOIN sandboxes sb ON sb.id = sv.sandbox_id
			WHERE sv.volume_id = ? AND sb.status IN (?, ?) ORDER BY sb.created_at, sb.id`), id, model.StatusCreating, api.StatusActive)
		if err != nil {
			return fmt.Errorf("list volume mounts: %w", err)
		}
		var mounters []string
		for rows.Next() {
			var sb string
			if err := rows.Scan(&sb); err != nil {
				rows.Close()
				return fmt.Errorf("read volume mount: %w", err)
			}
			mounters = append(mounters, sb)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("list volume mounts: %w", err)
		}
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM volumes WHERE id = ? AND account_id = ?`), id, accountID)
		if err != nil {
			return fmt.Errorf("delete volume: %w", err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return errors.Join(model.ErrNotFound, err)
		}
		if len(mounters) > 0 {
			return &model.VolumeInUseError{SandboxIDs: mounters} // rolls the delete back
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sandbox_volumes WHERE volume_id = ?`), id); err != nil {
			return fmt.Errorf("delete volume mounts: %w", err)
		}
		return nil
	})
}

// AttachVolumes implements model.VolumeStore.
func (s *Store) AttachVolumes(ctx context.Context, sandboxID string, volumeIDs []string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range volumeIDs {
			res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sandbox_volumes (sandbox_id, volume_id)
				SELECT ?, id FROM volumes WHERE id = ?`), sandboxID, id)
			if err != nil {
				return fmt.Errorf("attach volume: %w", s.mapErr(err))
			}
			if k, err := res.RowsAffected(); err != nil || k == 0 {
				return errors.Join(fmt.Errorf("attach volume %s: %w", id, model.ErrNotFound), err)
			}
		}
		return nil
	})
}
