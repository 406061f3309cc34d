//go:build linux

package images

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
)

// Errors of Manager lookups.
// They are API errors, so the server passes them on as they are.
var (
	ErrNotFound = api.Errorf(404, api.CodeNotFound, "image not found")
	ErrNotReady = api.Errorf(404, api.CodeNotFound, "image not ready").WithHint("wait until its status is completed")
	ErrInUse    = api.Errorf(409, api.CodeImageInUse, "image is in use or still being made").WithHint("delete the sandboxes booted from it first")
)

// Limits of a Manager (reference §3.7: 10 images per account).
const (
	MaxPerAccount = 10
	MaxRunning    = 2 // builds are CPU- and disk-heavy; the host has other work
)

// ErrLimit refuses an account's image beyond MaxPerAccount.
var ErrLimit = api.Errorf(429, api.CodeLimitExceeded, "the account has %d images, the most it may keep", MaxPerAccount).
	WithHint("remove one with `boxkite images rm ID`")

// checkLimit refuses a new image when the account has MaxPerAccount.
func (m *Manager) checkLimit(ctx context.Context, account string) error {
	imgs, err := m.List(ctx, account)
	if err != nil {
		return err
	}
	if len(imgs) >= MaxPerAccount {
		return ErrLimit
	}
	return nil
}

// Manager owns the images under one directory.
type Manager struct {
	dir     string
	sources Sources       // where builds fetch packages from (hosts.go)
	proxy   *egress.Proxy // builds' only way out
	jailer  Jailer        // runs builds; nil: builds fail

	buildTimeout   time.Duration // WithBuildTimeout
	buildDiskLimit int64         // WithBuildDiskLimit
	log            *slog.Logger
	now            func() time.Time

	recs Records
	// admit makes checking an account's images (the limit, an identical
	// build) and inserting the new one a single step, so concurrent
	// requests cannot each see room for one more.
	admit sync.Mutex
	wg    sync.WaitGroup
	slots chan struct{} // builds and extractions running at once; the rest stay queued

	stop       context.Context // ends at Close: running builds are killed, queued work is not started
	cancelStop context.CancelFunc

	// Tests only (WithDeleteHooksForTests): beforeDelete runs as Delete
	// starts, before the admission lock; beforeRemove before the
	// renamed tree is removed, after it.
	beforeDelete func(id string)
	beforeRemove func(trash string)
}

// record is an image and its account.
type record struct {
	api.Image
	AccountID string
}

// New opens dir, creating it. Images left queued or building by a previous
// process are marked failed, and their partial files removed: their work
// died with it.
func New(dir string, log *slog.Logger, opts ...Option) (*Manager, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create images dir: %w", err)
	}
	m := &Manager{
		dir: dir, sources: Sources{AptDir: "/etc/apt"}, proxy: &egress.Proxy{Log: log, Permit: MirrorAddr}, log: log, now: time.Now,
		recs: &fileRecords{dir: dir}, slots: make(chan struct{}, MaxRunning), buildTimeout: DefaultBuildTimeout,
		buildDiskLimit: DefaultBuildDiskLimit,
	}
	m.stop, m.cancelStop = context.WithCancel(context.Background())
	for _, o := range opts {
		o(m)
	}
	if err := m.adoptFileRecords(); err != nil {
		return nil, err
	}
	m.sweepTrash()
	imgs, err := m.recs.ListImages(context.Background(), "")
	if err != nil {
		return nil, err
	}
	for _, img := range imgs {
		switch {
		case img.Status == api.ImageQueued || img.Status == api.ImageBuilding:
			m.removeWork(img.ID)
			if err := m.save(m.interrupted(record{Image: img}, "interrupted by a server restart")); err != nil {
				return nil, err
			}
		case img.Status == api.ImageCompleted && img.Source == api.ImageSourceBuild:
			if err := m.mountBuilt(img.ID); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Wait blocks until background work started so far has finished.
func (m *Manager) Wait() { m.wg.Wait() }

// Close stops background work, failing the builds still running or
// queued (a build may run for half an hour: a server stopping does not
// wait for it), and unmounts the roots of built images. They stay on
// disk; New mounts them again.
func (m *Manager) Close() error {
	m.cancelStop()
	m.wg.Wait()
	imgs, err := m.recs.ListImages(context.Background(), "")
	for _, r := range imgs {
		if r.Source == api.ImageSourceBuild {
			m.unmountBuilt(r.ID)
		}
	}
	return err
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "img_" + hex.EncodeToString(b[:])
}

func (m *Manager) path(id string, name string) string { return filepath.Join(m.dir, id, name) }

// RootFS returns the root filesystem of the account's completed image id.
func (m *Manager) RootFS(_ context.Context, account, id string) (string, error) {
	r, err := m.load(account, id)
	if err != nil {
		return "", err
	}
	if r.Status != api.ImageCompleted {
		return "", ErrNotReady
	}
	return m.path(id, "rootfs"), nil
}

// Use records that sandbox boots from image id, so Delete refuses it
// while the sandbox lives. It is one step with Delete's check (m.admit):
// a create resolves the image's root before it calls Use, so an image
// deleted in between is ErrNotFound here, never a root gone at boot.
func (m *Manager) Use(ctx context.Context, id, sandbox string) error {
	m.admit.Lock()
	defer m.admit.Unlock()
	_, img, found, err := m.recs.ImageByID(ctx, id)
	if err != nil {
		return fmt.Errorf("record image use: %w", err)
	}
	if !found || img.Status != api.ImageCompleted {
		return ErrNotFound
	}
	if err := m.recs.UseImage(ctx, id, sandbox); err != nil {
		return fmt.Errorf("record image use: %w", err)
	}
	return nil
}

// Get returns the account's image id.
func (m *Manager) Get(_ context.Context, account, id string) (api.Image, error) {
	r, err := m.load(account, id)
	return r.Image, err
}

// List returns the account's images, newest first.
func (m *Manager) List(ctx context.Context, account string) ([]api.Image, error) {
	out, err := m.recs.ListImages(ctx, account)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b api.Image) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// Delete removes the account's image id unless a user recorded with Use
// (a sandbox booted from it, a snapshot restoring onto it) is still alive
// (inUse, asked under the admission lock) or it is still being made. The
// check, the record's removal and the rename of its tree to a .trash-
// directory are one step with Use; the tree itself is removed after,
// outside the lock, so builds, imports and creates need not wait for a
// large image's removal (a tree left by a crash or a failed removal is
// swept at the next start).
func (m *Manager) Delete(ctx context.Context, account, id string, inUse func(user string) bool) error {
	r, err := m.load(account, id)
	if err != nil {
		return err
	}
	if m.beforeDelete != nil {
		m.beforeDelete(id)
	}
	trash, err := m.unlink(ctx, r, inUse)
	if err != nil {
		return err
	}
	if m.beforeRemove != nil {
		m.beforeRemove(trash)
	}
	if err := os.RemoveAll(trash); err != nil {
		m.log.Warn("remove a deleted image's files; the next start sweeps them", "image", id, "dir", trash, "err", err)
	}
	return nil
}

// unlink is Delete's step under the admission lock: the users' check,
// the rename of the image's tree and the removal of its record. It
// returns the renamed tree.
func (m *Manager) unlink(ctx context.Context, r record, inUse func(user string) bool) (string, error) {
	m.admit.Lock()
	defer m.admit.Unlock()
	id := r.ID
	if _, _, found, err := m.recs.ImageByID(ctx, id); err != nil {
		return "", fmt.Errorf("delete image: %w", err)
	} else if !found {
		return "", ErrNotFound // removed meanwhile
	}
	users, err := m.recs.ImageUsers(ctx, id)
	if err != nil {
		return "", fmt.Errorf("delete image: %w", err)
	}
	for _, u := range users {
		if inUse(u) {
			return "", ErrInUse
		}
	}
	if r.Status == api.ImageQueued || r.Status == api.ImageBuilding {
		return "", ErrInUse
	}
	m.unmountBuilt(id)
	// Renamed first so a half-removed tree is never mistaken for an image.
	trash := filepath.Join(m.dir, trashPrefix+id)
	if err := os.Rename(filepath.Join(m.dir, id), trash); err != nil {
		return "", fmt.Errorf("delete image: %w", err)
	}
	if err := m.recs.RemoveImage(context.WithoutCancel(ctx), id); err != nil {
		if rerr := os.Rename(trash, filepath.Join(m.dir, id)); rerr != nil {
			m.log.Error("put back the files of an image whose record could not be removed", "image", id, "err", rerr)
		} else if r.Source == api.ImageSourceBuild && r.Status == api.ImageCompleted {
			_ = m.mountBuilt(id)
		}
		return "", fmt.Errorf("delete image: %w", err)
	}
	return trash, nil
}

// trashPrefix names the trees of deleted images not removed yet.
const trashPrefix = ".trash-"

// sweepTrash removes the trees of images deleted before a crash or whose
// removal failed.
func (m *Manager) sweepTrash() {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		m.log.Warn("list deleted images' files", "err", err)
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), trashPrefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(m.dir, e.Name())); err != nil {
			m.log.Warn("remove a deleted image's files", "dir", e.Name(), "err", err)
		}
	}
}

func (m *Manager) load(account, id string) (record, error) {
	if !validID(id) {
		return record{}, ErrNotFound
	}
	acct, img, found, err := m.recs.ImageByID(context.Background(), id)
	if err != nil {
		return record{}, fmt.Errorf("read image: %w", err)
	}
	if !found || acct != account {
		return record{}, ErrNotFound
	}
	return record{Image: img, AccountID: acct}, nil
}

func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "img_")
	if !ok || len(rest) != 24 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// save stores r's status and outcome.
func (m *Manager) save(r record) error {
	if err := m.recs.UpdateImage(context.Background(), r.Image); err != nil {
		return fmt.Errorf("save image: %w", err)
	}
	return nil
}

// insert records the new image r.
func (m *Manager) insert(r record) error {
	if err := m.recs.InsertImage(context.Background(), r.AccountID, r.Image); err != nil {
		return fmt.Errorf("record image: %w", err)
	}
	return nil
}

// Import stores the archive read from body as a new image of account and
// extracts it in the background; the image comes back queued.
func (m *Manager) Import(ctx context.Context, account, label string, body io.Reader) (api.Image, error) {
	if err := m.checkLimit(ctx, account); err != nil {
		return api.Image{}, err
	}
	r := record{AccountID: account, Image: api.Image{
		ID: newID(), Label: label, Status: api.ImageQueued, Source: api.ImageSourceImport, CreatedAt: m.now().UTC(),
	}}
	if err := os.Mkdir(filepath.Join(m.dir, r.ID), 0o700); err != nil {
		return api.Image{}, fmt.Errorf("create image: %w", err)
	}
	archive := m.path(r.ID, "archive.tar")
	if err := writeFile(archive, body); err != nil {
		_ = os.RemoveAll(filepath.Join(m.dir, r.ID))
		return api.Image{}, err
	}
	// Checked again: other images may have been admitted during the upload.
	if err := m.admitImport(ctx, r); err != nil {
		_ = os.RemoveAll(filepath.Join(m.dir, r.ID))
		return api.Image{}, err
	}
	m.wg.Go(func() {
		m.finish(context.WithoutCancel(ctx), r, func() error { return m.extractArchive(r.ID, archive) })
	})
	return r.Image, nil
}

// admitImport inserts the import r unless its account is at the limit.
func (m *Manager) admitImport(ctx context.Context, r record) error {
	m.admit.Lock()
	defer m.admit.Unlock()
	if err := m.checkLimit(ctx, r.AccountID); err != nil {
		return err
	}
	return m.insert(r)
}

// admitBuild returns the account's image of an identical spec (created
// false), else records a new queued build of spec unless the account is at
// the limit. The image's directory exists when it returns.
func (m *Manager) admitBuild(ctx context.Context, account, label string, spec api.ImageSpec) (record, bool, error) {
	m.admit.Lock()
	defer m.admit.Unlock()
	hash := specHash(spec)
	imgs, err := m.recs.ListImages(ctx, account)
	if err != nil {
		return record{}, false, err
	}
	for _, img := range imgs {
		if img.Spec != nil && specHash(*img.Spec) == hash && img.Status != api.ImageFailed {
			img, err := m.labelExisting(ctx, img, label)
			return record{Image: img, AccountID: account}, false, err
		}
	}
	if err := m.checkLimit(ctx, account); err != nil {
		return record{}, false, err
	}
	r := record{AccountID: account, Image: api.Image{
		ID: newID(), Label: label, Status: api.ImageQueued, Source: api.ImageSourceBuild, Spec: &spec, CreatedAt: m.now().UTC(),
	}}
	if err := os.Mkdir(filepath.Join(m.dir, r.ID), 0o700); err != nil {
		return record{}, false, fmt.Errorf("create image: %w", err)
	}
	if err := m.insert(r); err != nil {
		_ = os.RemoveAll(filepath.Join(m.dir, r.ID))
		return record{}, false, err
	}
	return r, true, nil
}

// labelExisting gives the existing image of an identical build the
// request's label when it has none; a different label is refused (one
// image, one label: silently keeping either would lose the other).
func (m *Manager) labelExisting(ctx context.Context, img api.Image, label string) (api.Image, error) {
	if label == "" || label == img.Label {
		return img, nil
	}
	if img.Label != "" {
		return api.Image{}, api.Errorf(http.StatusConflict, api.CodeConflict,
			"an identical image %s exists with the label %q", img.ID, img.Label).
			WithHint(fmt.Sprintf("use it by its id or label %q; an image has one label", img.Label))
	}
	if err := m.recs.LabelImage(ctx, img.ID, label); err != nil {
		return api.Image{}, fmt.Errorf("label image: %w", err)
	}
	img.Label = label
	return img, nil
}

// finish runs work as the image's build and records the outcome.
func (m *Manager) finish(ctx context.Context, r record, work func() error) {
	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	case <-m.stop.Done():
	}
	if m.stop.Err() != nil { // also when a slot freed as the server stopped
		m.removeWork(r.ID)
		if err := m.save(m.interrupted(r, "interrupted by a server shutdown before it started")); err != nil {
			m.log.ErrorContext(ctx, "image status", "image", r.ID, "err", err)
		}
		return
	}
	r.Status = api.ImageBuilding
	if err := m.save(r); err != nil {
		m.log.ErrorContext(ctx, "image status", "image", r.ID, "err", err)
	}
	err := work()
	now := m.now().UTC()
	r.CompletedAt = &now
	if err != nil {
		m.log.WarnContext(ctx, "image failed", "image", r.ID, "err", err)
		r.Status, r.FailureReason = api.ImageFailed, err.Error()
		if f, ok := errors.AsType[*buildFailure](err); ok {
			r.FailureCode, r.FailureHint = f.code, f.hint
		}
		m.removeWork(r.ID)
	} else {
		r.Status = api.ImageCompleted
		r.SizeBytes = m.imageSize(r.ID)
	}
	if err := m.save(r); err != nil {
		m.log.ErrorContext(ctx, "image status", "image", r.ID, "err", err)
	}
}

// interrupted is r failed because the server stopped while it was queued
// or being made.
func (m *Manager) interrupted(r record, why string) record {
	now := m.now().UTC()
	r.Status, r.FailureReason, r.CompletedAt = api.ImageFailed, why, &now
	if r.Source == api.ImageSourceBuild {
		r.FailureCode, r.FailureHint = api.CodeImageBuildFailed, "run the same build again: a failed image is never reused"
	} else {
		r.FailureCode, r.FailureHint = api.CodeImageImportFailed, "import it again: a failed image is never reused"
	}
	return r
}

// removeWork frees what a failed image's work left: its root (unmounted
// first, if a build got as far as mounting it) and a build's layers and
// scratch. The record and build log stay.
func (m *Manager) removeWork(id string) {
	m.unmountBuilt(id)
	for _, name := range []string{"rootfs", "upper", "build", "archive.tar", "layout"} {
		_ = os.RemoveAll(m.path(id, name))
	}
}

func writeFile(path string, body io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("store archive: %w", err)
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store archive: %w", err)
	}
	return nil
}

// imageSize is the size of the files an image itself holds: a build's
// upper dirs (its rootfs is overlays of the host's system, whose gigabytes
// are not the image's), else an import's extracted rootfs.
func (m *Manager) imageSize(id string) int64 {
	if upper := m.path(id, "upper"); isDir(upper) {
		return duSize(upper)
	}
	return duSize(m.path(id, "rootfs"))
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}
