package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// The Store keeps server/images' records (images.Records) and the
// sandboxes' egress grants (model.EgressStore).

const imageColumns = `id, account_id, label, source, status, spec, failure_reason, failure_code, failure_hint, size_bytes, created_at, completed_at`

func scanImage(r rowScanner) (string, api.Image, error) {
	var img api.Image
	var acct, spec string
	var created int64
	var completed sql.NullInt64
	if err := r.Scan(&img.ID, &acct, &img.Label, &img.Source, &img.Status, &spec, &img.FailureReason,
		&img.FailureCode, &img.FailureHint, &img.SizeBytes, &created, &completed); err != nil {
		return "", img, err
	}
	img.CreatedAt = fromMicros(created)
	if completed.Valid {
		t := fromMicros(completed.Int64)
		img.CompletedAt = &t
	}
	if spec != "" {
		img.Spec = new(api.ImageSpec)
		if err := json.Unmarshal([]byte(spec), img.Spec); err != nil {
			return "", img, fmt.Errorf("decode image spec: %w", err)
		}
	}
	return acct, img, nil
}

func completedMicros(img api.Image) sql.NullInt64 {
	if img.CompletedAt == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*img.CompletedAt), Valid: true}
}

// InsertImage implements images.Records.
func (s *Store) InsertImage(ctx context.Context, accountID string, img api.Image) error {
	spec := ""
	if img.Spec != nil {
		b, err := json.Marshal(img.Spec)
		if err != nil {
			return fmt.Errorf("encode image spec: %w", err)
		}
		spec = string(b)
	}
	_, err := s.exec(ctx, s.q(`INSERT INTO images (`+imageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		img.ID, accountID, img.Label, img.Source, img.Status, spec, img.FailureReason, img.FailureCode, img.FailureHint, img.SizeBytes,
		micros(img.CreatedAt), completedMicros(img))
	if err != nil {
		return fmt.Errorf("insert image: %w", s.mapErr(err))
	}
	return nil
}

// UpdateImage implements images.Records.
func (s *Store) UpdateImage(ctx context.Context, img api.Image) error {
	res, err := s.exec(ctx, s.q(`UPDATE images SET status = ?, failure_reason = ?, failure_code = ?, failure_hint = ?, size_bytes = ?, completed_at = ? WHERE id = ?`),
		img.Status, img.FailureReason, img.FailureCode, img.FailureHint, img.SizeBytes, completedMicros(img), img.ID)
	if err != nil {
		return fmt.Errorf("update image: %w", s.mapErr(err))
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(fmt.Errorf("update image %s: no such image", img.ID), err)
	}
	return nil
}

// ImageByID implements images.Records.
func (s *Store) ImageByID(ctx context.Context, id string) (string, api.Image, bool, error) {
	acct, img, err := scanImage(s.db.QueryRowContext(ctx, s.q(`SELECT `+imageColumns+` FROM images WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return "", api.Image{}, false, nil
	}
	if err != nil {
		return "", api.Image{}, false, fmt.Errorf("read image: %w", err)
	}
	return acct, img, true, nil
}

// ListImages implements images.Records.
func (s *Store) ListImages(ctx context.Context, accountID string) ([]api.Image, error) {
	query, args := `SELECT `+imageColumns+` FROM images ORDER BY created_at DESC, id`, []any{}
	if accountID != "" {
		query, args = `SELECT `+imageColumns+` FROM images WHERE account_id = ? ORDER BY created_at DESC, id`, []any{accountID}
	}
	return queryAll(ctx, s, "images", func(r rowScanner) (api.Image, error) {
		_, img, err := scanImage(r)
		return img, err
	}, query, args...)
}

// LabelImage implements images.Records.
func (s *Store) LabelImage(ctx context.Context, id, label string) error {
	if _, err := s.exec(ctx, s.q(`UPDATE images SET label = ? WHERE id = ?`), label, id); err != nil {
		return fmt.Errorf("label image: %w", s.mapErr(err))
	}
	return nil
}

// RemoveImage implements images.Records.
func (s *Store) RemoveImage(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sandbox_images WHERE image_id = ?`), id); err != nil {
			return fmt.Errorf("delete image users: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM images WHERE id = ?`), id); err != nil {
			return fmt.Errorf("delete image: %w", err)
		}
		return nil
	})
}

// UseImage implements images.Records.
func (s *Store) UseImage(ctx context.Context, imageID, sandboxID string) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO sandbox_images (sandbox_id, image_id) VALUES (?, ?)`), sandboxID, imageID)
	if err != nil {
		return fmt.Errorf("record image use: %w", s.mapErr(err))
	}
	return nil
}

// ImageUsers implements images.Records.
func (s *Store) ImageUsers(ctx context.Context, imageID string) ([]string, error) {
	return queryAll(ctx, s, "image users", scanString, `SELECT sandbox_id FROM sandbox_images WHERE image_id = ? ORDER BY sandbox_id`, imageID)
}

// SetSandboxEgress implements model.EgressStore.
func (s *Store) SetSandboxEgress(ctx context.Context, sandboxID string, grants []string) error {
	_, err := s.exec(ctx, s.q(`INSERT INTO sandbox_egress (sandbox_id, grants) VALUES (?, ?)
		ON CONFLICT (sandbox_id) DO UPDATE SET grants = excluded.grants`), sandboxID, strings.Join(grants, "\n"))
	if err != nil {
		return fmt.Errorf("record egress grants: %w", s.mapErr(err))
	}
	return nil
}

// SandboxEgress implements model.EgressStore.
func (s *Store) SandboxEgress(ctx context.Context, sandboxID string) ([]string, error) {
	var grants string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT grants FROM sandbox_egress WHERE sandbox_id = ?`), sandboxID).Scan(&grants)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && grants == "") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read egress grants: %w", err)
	}
	return strings.Split(grants, "\n"), nil
}
