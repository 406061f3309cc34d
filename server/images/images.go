package images

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Errors of Manager lookups.
// They are API errors, so the server passes them on as they are.
var (
	ErrNotFound = api.Errorf(404, api.CodeNotFound, "image not found")
	ErrNotReady = api.Errorf(404, api.CodeNotFound, "image not ready").WithHint("wait until its status is completed")
	ErrInUse    = api.Errorf(409, api.CodeConflict, "image is in use or still being made").WithHint("delete the sandboxes booted from it first")
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
func (m *Manager) checkLimit(account string) error {
	imgs, err := m.List(account)
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
	dir    string
	aptDir string // where the host's apt sources are, normally /etc/apt
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex
	users map[string]map[string]bool // image id → sandbox ids booted from it
	wg    sync.WaitGroup
	slots chan struct{} // builds and extractions running at once; the rest stay queued
}

// record is image.json.
type record struct {
	api.Image
	AccountID string `json:"account_id"`
	SpecHash  string `json:"spec_hash,omitempty"` // builds: dedup key (specHash)
}

// New opens dir, creating it. Images left queued or building by a previous
// process are marked failed: their work died with it.
func New(dir string, log *slog.Logger) (*Manager, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create images dir: %w", err)
	}
	m := &Manager{
		dir: dir, aptDir: "/etc/apt", log: log, now: time.Now,
		users: map[string]map[string]bool{}, slots: make(chan struct{}, MaxRunning),
	}
	recs, err := m.all()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		switch {
		case r.Status == api.ImageQueued || r.Status == api.ImageBuilding:
			r.Status, r.FailureReason = api.ImageFailed, "interrupted by a server restart"
			if err := m.save(r); err != nil {
				return nil, err
			}
		case r.Status == api.ImageCompleted && r.Source == api.ImageSourceBuild:
			if err := m.mountBuilt(r.ID); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Wait blocks until background work started so far has finished.
func (m *Manager) Wait() { m.wg.Wait() }

// Close waits for background work and unmounts the roots of built images.
// They stay on disk; New mounts them again.
func (m *Manager) Close() error {
	m.wg.Wait()
	recs, err := m.all()
	for _, r := range recs {
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
func (m *Manager) RootFS(account, id string) (string, error) {
	r, err := m.load(account, id)
	if err != nil {
		return "", err
	}
	if r.Status != api.ImageCompleted {
		return "", ErrNotReady
	}
	return m.path(id, "rootfs"), nil
}

// Use records that sandbox boots from image id, so Delete refuses it;
// Release forgets the sandbox.
func (m *Manager) Use(id, sandbox string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users[id] == nil {
		m.users[id] = map[string]bool{}
	}
	m.users[id][sandbox] = true
}

// Release forgets sandbox for every image.
func (m *Manager) Release(sandbox string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, us := range m.users {
		delete(us, sandbox)
		if len(us) == 0 {
			delete(m.users, id)
		}
	}
}

// Users returns the sandboxes recorded as booted from image id.
func (m *Manager) Users(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for s := range m.users[id] {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Get returns the account's image id.
func (m *Manager) Get(account, id string) (api.Image, error) {
	r, err := m.load(account, id)
	return r.Image, err
}

// List returns the account's images, newest first.
func (m *Manager) List(account string) ([]api.Image, error) {
	recs, err := m.all()
	if err != nil {
		return nil, err
	}
	out := []api.Image{}
	for _, r := range recs {
		if r.AccountID == account {
			out = append(out, r.Image)
		}
	}
	slices.SortFunc(out, func(a, b api.Image) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// Delete removes the account's image id unless a sandbox uses it (inUse
// reports whether a recorded user is still alive) or it is still being made.
func (m *Manager) Delete(account, id string, inUse func(sandbox string) bool) error {
	r, err := m.load(account, id)
	if err != nil {
		return err
	}
	for _, sb := range m.Users(id) {
		if inUse(sb) {
			return ErrInUse
		}
		m.Release(sb)
	}
	if r.Status == api.ImageQueued || r.Status == api.ImageBuilding {
		return ErrInUse
	}
	m.unmountBuilt(id)
	// Renamed first so a half-removed tree is never mistaken for an image.
	trash := filepath.Join(m.dir, ".trash-"+id)
	if err := os.Rename(filepath.Join(m.dir, id), trash); err != nil {
		return fmt.Errorf("delete image: %w", err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("delete image: %w", err)
	}
	return nil
}

func (m *Manager) load(account, id string) (record, error) {
	if !validID(id) {
		return record{}, ErrNotFound
	}
	b, err := os.ReadFile(m.path(id, "image.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, ErrNotFound
	}
	if err != nil {
		return record{}, fmt.Errorf("read image: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("read image %s: %w", id, err)
	}
	if r.AccountID != account {
		return record{}, ErrNotFound
	}
	return r, nil
}

func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "img_")
	if !ok || len(rest) != 24 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

func (m *Manager) all() ([]record, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var out []record
	for _, e := range entries {
		if !validID(e.Name()) {
			continue
		}
		b, err := os.ReadFile(m.path(e.Name(), "image.json"))
		if err != nil {
			continue // being created or deleted
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("read image %s: %w", e.Name(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// save writes r's record atomically.
func (m *Manager) save(r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image: %w", err)
	}
	tmp := m.path(r.ID, "image.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	if err := os.Rename(tmp, m.path(r.ID, "image.json")); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return nil
}

// Import stores the archive read from body as a new image of account and
// extracts it in the background; the image comes back queued.
func (m *Manager) Import(ctx context.Context, account, label string, body io.Reader) (api.Image, error) {
	if err := m.checkLimit(account); err != nil {
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
	if err := m.save(r); err != nil {
		_ = os.RemoveAll(filepath.Join(m.dir, r.ID))
		return api.Image{}, err
	}
	m.wg.Go(func() {
		m.finish(context.WithoutCancel(ctx), r, func() error { return m.extractArchive(r.ID, archive) })
	})
	return r.Image, nil
}

// finish runs work as the image's build and records the outcome.
func (m *Manager) finish(ctx context.Context, r record, work func() error) {
	m.slots <- struct{}{}
	defer func() { <-m.slots }()
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
		_ = os.RemoveAll(m.path(r.ID, "rootfs"))
	} else {
		r.Status = api.ImageCompleted
		r.SizeBytes = duSize(m.path(r.ID, "rootfs"))
	}
	if err := m.save(r); err != nil {
		m.log.ErrorContext(ctx, "image status", "image", r.ID, "err", err)
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

func duSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
