//go:build linux

package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/boxkite/boxkite/client/api"
)

// Records keeps image records and which sandboxes boot from each image.
// server/sqlstore implements it, so a restarted server keeps every
// image's status and still refuses deleting one in use; without
// WithRecords a Manager keeps them as JSON files next to the images, and
// the users in memory.
type Records interface {
	// InsertImage adds the account's new image.
	InsertImage(ctx context.Context, accountID string, img api.Image) error
	// UpdateImage stores img's status, failure reason, size and
	// completion time.
	UpdateImage(ctx context.Context, img api.Image) error
	// ImageByID returns image id and its account; found is false if none.
	ImageByID(ctx context.Context, id string) (accountID string, img api.Image, found bool, err error)
	// ListImages returns the account's images, or every image for "".
	ListImages(ctx context.Context, accountID string) ([]api.Image, error)
	// LabelImage sets image id's label, nothing else (a build may be
	// updating its status meanwhile).
	LabelImage(ctx context.Context, id, label string) error
	// RemoveImage forgets image id and its users.
	RemoveImage(ctx context.Context, id string) error
	// UseImage records that sandbox boots from image id.
	UseImage(ctx context.Context, imageID, sandboxID string) error
	// ImageUsers returns the sandboxes recorded as booted from image id.
	ImageUsers(ctx context.Context, imageID string) ([]string, error)
}

// An Option configures a Manager.
type Option func(*Manager)

// WithRecords keeps the Manager's records in r.
func WithRecords(r Records) Option { return func(m *Manager) { m.recs = r } }

// WithDeleteHooksForTests sets what Delete runs as it starts, before the
// admission lock (beforeDelete), and before it removes the renamed tree of
// the image, after the lock (beforeRemove): tests only.
func WithDeleteHooksForTests(beforeDelete func(id string), beforeRemove func(trash string)) Option {
	return func(m *Manager) { m.beforeDelete, m.beforeRemove = beforeDelete, beforeRemove }
}

// fileRecords is the default Records: image.json in each image's
// directory, users in memory.
type fileRecords struct {
	dir string

	mu    sync.Mutex
	users map[string]map[string]bool // image id → sandbox ids
}

// fileRecord is image.json.
type fileRecord struct {
	api.Image
	AccountID string `json:"account_id"`
}

func (f *fileRecords) path(id string) string { return filepath.Join(f.dir, id, "image.json") }

func (f *fileRecords) write(accountID string, img api.Image) error {
	b, err := json.MarshalIndent(fileRecord{Image: img, AccountID: accountID}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image: %w", err)
	}
	tmp := f.path(img.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	if err := os.Rename(tmp, f.path(img.ID)); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return nil
}

func (f *fileRecords) InsertImage(_ context.Context, accountID string, img api.Image) error {
	return f.write(accountID, img)
}

func (f *fileRecords) UpdateImage(ctx context.Context, img api.Image) error {
	f.mu.Lock() // read-modify-write, as LabelImage's
	defer f.mu.Unlock()
	acct, old, found, err := f.ImageByID(ctx, img.ID)
	if err != nil || !found {
		return errors.Join(err, fmt.Errorf("update image %s: %w", img.ID, fs.ErrNotExist))
	}
	old.Status, old.SizeBytes, old.CompletedAt = img.Status, img.SizeBytes, img.CompletedAt
	old.FailureReason, old.FailureCode, old.FailureHint = img.FailureReason, img.FailureCode, img.FailureHint
	return f.write(acct, old)
}

func (f *fileRecords) LabelImage(ctx context.Context, id, label string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	acct, old, found, err := f.ImageByID(ctx, id)
	if err != nil || !found {
		return errors.Join(err, fmt.Errorf("label image %s: %w", id, fs.ErrNotExist))
	}
	old.Label = label
	return f.write(acct, old)
}

func (f *fileRecords) ImageByID(_ context.Context, id string) (string, api.Image, bool, error) {
	b, err := os.ReadFile(f.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", api.Image{}, false, nil
	}
	if err != nil {
		return "", api.Image{}, false, fmt.Errorf("read image: %w", err)
	}
	var r fileRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return "", api.Image{}, false, fmt.Errorf("read image %s: %w", id, err)
	}
	return r.AccountID, r.Image, true, nil
}

func (f *fileRecords) ListImages(ctx context.Context, accountID string) ([]api.Image, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := []api.Image{}
	for _, e := range entries {
		if !validID(e.Name()) {
			continue
		}
		acct, img, found, err := f.ImageByID(ctx, e.Name())
		if err != nil {
			return nil, err
		}
		if found && (accountID == "" || acct == accountID) {
			out = append(out, img)
		}
	}
	return out, nil
}

func (f *fileRecords) RemoveImage(_ context.Context, id string) error {
	f.mu.Lock()
	delete(f.users, id)
	f.mu.Unlock()
	if err := os.Remove(f.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove image record: %w", err)
	}
	return nil
}

func (f *fileRecords) UseImage(_ context.Context, imageID, sandboxID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users = map[string]map[string]bool{}
	}
	if f.users[imageID] == nil {
		f.users[imageID] = map[string]bool{}
	}
	f.users[imageID][sandboxID] = true
	return nil
}

func (f *fileRecords) ImageUsers(_ context.Context, imageID string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for s := range f.users[imageID] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

// adoptFileRecords moves image.json records an earlier version left in
// the images directory into m's Records, when those are not the files.
func (m *Manager) adoptFileRecords() error {
	if _, ok := m.recs.(*fileRecords); ok {
		return nil
	}
	ctx := context.Background()
	files := &fileRecords{dir: m.dir}
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	for _, e := range entries {
		if !validID(e.Name()) {
			continue
		}
		acct, img, found, err := files.ImageByID(ctx, e.Name())
		if err != nil || !found {
			continue
		}
		if _, _, have, err := m.recs.ImageByID(ctx, img.ID); err != nil {
			return err
		} else if !have {
			if err := m.recs.InsertImage(ctx, acct, img); err != nil {
				return err
			}
		}
		if err := files.RemoveImage(ctx, img.ID); err != nil {
			return err
		}
	}
	return nil
}
