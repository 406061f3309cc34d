package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

var _ model.SnapshotStore = (*Store)(nil)

// snapshotLockID is the Postgres advisory lock that serialises snapshot
// reservations across servers sharing one database ("bxksnapl").
const snapshotLockID = 0x62786b736e61706c

const snapshotColumns = `id, account_id, sandbox_id, label, status, snap_key, size_bytes, method, driver,
	size, storage_gb, image_id, grants, mount_points, created_at, deleted_at, owner, owner_token`

func scanSnapshot(r rowScanner) (*model.Snapshot, error) {
	var sn model.Snapshot
	var created int64
	var deleted sql.NullInt64
	var grants, mounts string
	err := r.Scan(&sn.ID, &sn.AccountID, &sn.SandboxID, &sn.Label, &sn.Status, &sn.Key, &sn.SizeBytes, &sn.Method, &sn.Driver,
		&sn.Size, &sn.StorageGB, &sn.ImageID, &grants, &mounts, &created, &deleted, &sn.Owner, &sn.OwnerToken)
	if err != nil {
		return nil, err
	}
	if mounts != "" {
		if err := json.Unmarshal([]byte(mounts), &sn.MountPoints); err != nil {
			return nil, fmt.Errorf("read snapshot %s mount points: %w", sn.ID, err)
		}
	}
	if grants != "" { // '': taken before grants were recorded, none
		if err := json.Unmarshal([]byte(grants), &sn.Grants); err != nil {
			return nil, fmt.Errorf("read snapshot %s grants: %w", sn.ID, err)
		}
	}
	sn.CreatedAt, sn.DeletedAt = fromMicros(created), fromNullMicros(deleted)
	return &sn, nil
}

// snapshotMounts is sn's mount points as stored: JSON, ” for none.
func snapshotMounts(sn *model.Snapshot) (string, error) {
	if len(sn.MountPoints) == 0 {
		return "", nil
	}
	b, err := json.Marshal(sn.MountPoints)
	if err != nil {
		return "", fmt.Errorf("encode snapshot mount points: %w", err)
	}
	return string(b), nil
}

// snapshotGrants is sn's grants as stored: JSON, ” for none.
func snapshotGrants(sn *model.Snapshot) (string, error) {
	if len(sn.Grants.Secrets) == 0 && len(sn.Grants.Egress) == 0 {
		return "", nil
	}
	b, err := json.Marshal(sn.Grants)
	if err != nil {
		return "", fmt.Errorf("encode snapshot grants: %w", err)
	}
	return string(b), nil
}

// ReserveSnapshot implements model.SnapshotStore.
func (s *Store) ReserveSnapshot(ctx context.Context, sn *model.Snapshot, limit int) error {
	grants, err := snapshotGrants(sn)
	if err != nil {
		return err
	}
	mounts, err := snapshotMounts(sn)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.name == "postgres" {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(snapshotLockID)); err != nil {
				return fmt.Errorf("take snapshot lock: %w", err)
			}
		}
		if limit > 0 {
			var n int
			err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM snapshots
				WHERE account_id = ? AND deleted_at IS NULL AND status <> ?`), sn.AccountID, api.SnapshotFailed).Scan(&n)
			if err != nil {
				return fmt.Errorf("count snapshots: %w", err)
			}
			if n >= limit {
				return &model.SnapshotLimitError{Limit: limit, Count: n}
			}
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO snapshots (`+snapshotColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			sn.ID, sn.AccountID, sn.SandboxID, sn.Label, sn.Status, sn.Key, sn.SizeBytes, sn.Method, sn.Driver,
			sn.Size, sn.StorageGB, sn.ImageID, grants, mounts, micros(sn.CreatedAt), nullMicros(sn.DeletedAt), sn.Owner, sn.OwnerToken)
		if err != nil {
			return fmt.Errorf("insert snapshot: %w", s.mapErr(err))
		}
		return nil
	})
}

// Snapshot implements model.SnapshotStore.
func (s *Store) Snapshot(ctx context.Context, accountID, id string) (*model.Snapshot, error) {
	sn, err := scanSnapshot(s.db.QueryRowContext(ctx, s.q(`SELECT `+snapshotColumns+` FROM snapshots
		WHERE id = ? AND account_id = ? AND deleted_at IS NULL`), id, accountID))
	if err != nil {
		return nil, s.mapErr(err)
	}
	return sn, nil
}

func (s *Store) querySnapshots(ctx context.Context, query string, args ...any) ([]*model.Snapshot, error) {
	return queryAll(ctx, s, "snapshots", scanSnapshot, query, args...)
}

// ListSnapshots implements model.SnapshotStore.
func (s *Store) ListSnapshots(ctx context.Context, accountID, sandboxID string) ([]*model.Snapshot, error) {
	if sandboxID == "" {
		return s.querySnapshots(ctx, `SELECT `+snapshotColumns+` FROM snapshots
			WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`, accountID)
	}
	return s.querySnapshots(ctx, `SELECT `+snapshotColumns+` FROM snapshots
		WHERE account_id = ? AND sandbox_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`, accountID, sandboxID)
}

// SnapshotsWithStatus implements model.SnapshotStore.
func (s *Store) SnapshotsWithStatus(ctx context.Context, status string) ([]*model.Snapshot, error) {
	return s.querySnapshots(ctx, `SELECT `+snapshotColumns+` FROM snapshots
		WHERE status = ? AND deleted_at IS NULL ORDER BY created_at, id`, status)
}

// UpdateSnapshot implements model.SnapshotStore. The id, account, sandbox,
// grants, owner and creation time are immutable.
func (s *Store) UpdateSnapshot(ctx context.Context, id string, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	return s.updateSnapshot(ctx, id, nil, fn)
}

// FinishSnapshot implements model.SnapshotStore: UpdateSnapshot with the
// owner's lease read, in its transaction, after the row is locked.
func (s *Store) FinishSnapshot(ctx context.Context, id string, now time.Time, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	return s.updateSnapshot(ctx, id, &now, fn)
}

// updateSnapshot is UpdateSnapshot, fenced by the owner's lease at *fence
// when fence is set (FinishSnapshot).
func (s *Store) updateSnapshot(ctx context.Context, id string, fence *time.Time, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	var sn *model.Snapshot
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		sn, err = scanSnapshot(tx.QueryRowContext(ctx, s.q(`SELECT `+snapshotColumns+` FROM snapshots WHERE id = ?`+s.d.forUpdate), id))
		if err != nil {
			return s.mapErr(err)
		}
		if fence != nil && sn.OwnerToken > 0 {
			var n int
			err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM server_instances WHERE id = ? AND token = ? AND alive_until > ?`),
				sn.Owner, sn.OwnerToken, micros(*fence)).Scan(&n)
			if err != nil {
				return fmt.Errorf("read the snapshot owner's lease: %w", err)
			}
			if n == 0 {
				return model.ErrOwnerLeaseLost
			}
		}
		if err := fn(sn); err != nil {
			return err
		}
		mounts, err := snapshotMounts(sn)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE snapshots SET label = ?, status = ?, snap_key = ?, size_bytes = ?, method = ?,
			mount_points = ?, deleted_at = ? WHERE id = ?`),
			sn.Label, sn.Status, sn.Key, sn.SizeBytes, sn.Method, mounts, nullMicros(sn.DeletedAt), id)
		if err != nil {
			return fmt.Errorf("update snapshot: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sn, nil
}

// snapshotKeyLockClass is the first half of the Postgres advisory lock
// that orders a claim of a snapshot key against a drop of it across
// servers ("bkss"); the second is the key's hash. Two-key advisory locks
// never conflict with the one-key snapshotLockID.
const snapshotKeyLockClass = 0x626b7373

// lockSnapshotKey takes key's lock for the rest of tx on Postgres; SQLite
// needs none: its write transactions (BEGIN IMMEDIATE) take turns.
func (s *Store) lockSnapshotKey(ctx context.Context, tx *sql.Tx, key string) error {
	if s.d.name != "postgres" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, snapshotKeyLockClass, key); err != nil {
		return fmt.Errorf("take snapshot key lock: %w", err)
	}
	return nil
}

// ClaimSnapshotKey implements model.SnapshotStore.
func (s *Store) ClaimSnapshotKey(ctx context.Context, id, key string, now time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockSnapshotKey(ctx, tx, key); err != nil {
			return err
		}
		var n int
		err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM snapshot_drops WHERE snap_key = ? AND lease_until > ?`),
			key, micros(now)).Scan(&n)
		if err != nil {
			return fmt.Errorf("find drops of a snapshot key: %w", err)
		}
		if n > 0 {
			return model.ErrSnapshotKeyDropping
		}
		res, err := tx.ExecContext(ctx, s.q(`UPDATE snapshots SET snap_key = ?
			WHERE id = ? AND status = ? AND deleted_at IS NULL`), key, id, api.SnapshotPending)
		if err != nil {
			return fmt.Errorf("claim snapshot key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, model.ErrNotFound)
		}
		return nil
	})
}

// BeginSnapshotDrop implements model.SnapshotStore.
func (s *Store) BeginSnapshotDrop(ctx context.Context, key string, now, until time.Time) (bool, error) {
	var begun bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		begun = false // the body may run again
		if err := s.lockSnapshotKey(ctx, tx, key); err != nil {
			return err
		}
		var held, dropping int
		err := tx.QueryRowContext(ctx, s.q(`SELECT
			(SELECT COUNT(*) FROM snapshots WHERE snap_key = ? AND deleted_at IS NULL),
			(SELECT COUNT(*) FROM snapshot_drops WHERE snap_key = ? AND lease_until > ?)`),
			key, key, micros(now)).Scan(&held, &dropping)
		if err != nil {
			return fmt.Errorf("count snapshots of a key: %w", err)
		}
		if held > 0 || dropping > 0 {
			return nil
		}
		if s.dropChecked != nil {
			s.dropChecked()
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO snapshot_drops (snap_key, lease_until) VALUES (?, ?)
			ON CONFLICT (snap_key) DO UPDATE SET lease_until = excluded.lease_until`), key, micros(until))
		if err != nil {
			return fmt.Errorf("record snapshot drop: %w", err)
		}
		begun = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return begun, nil
}

// EndSnapshotDrop implements model.SnapshotStore.
func (s *Store) EndSnapshotDrop(ctx context.Context, key string) error {
	if _, err := s.exec(ctx, s.q(`DELETE FROM snapshot_drops WHERE snap_key = ?`), key); err != nil {
		return fmt.Errorf("end snapshot drop: %w", err)
	}
	return nil
}

// SandboxImageID implements model.SnapshotStore.
func (s *Store) SandboxImageID(ctx context.Context, sandboxID string) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT image_id FROM sandbox_images WHERE sandbox_id = ?`), sandboxID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read sandbox image: %w", err)
	}
	return id, nil
}
