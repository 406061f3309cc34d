//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/boxkite/boxkite/server/local/loopdisk"
	"github.com/boxkite/boxkite/server/model"
)

// A snapshot's portable form (model.SnapshotPorter), which the control
// plane keeps in object storage when one is configured, is the image's
// runs of data without its holes (loopdisk.Export). A restore on a host
// without the image (ImportSnapshot) writes the runs into a sparse file
// of that length under the same key.

var _ model.SnapshotPorter = (*Driver)(nil)

// ExportSnapshot implements model.SnapshotPorter.
func (d *Driver) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	if !validSnapshotKey.MatchString(key) {
		return nil, 0, fmt.Errorf("export snapshot: invalid key %q", key)
	}
	f, err := os.Open(d.snapshotPath(key))
	if err != nil {
		return nil, 0, fmt.Errorf("export snapshot: %w", err)
	}
	r, n, err := loopdisk.Export(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("export snapshot %s: %w", key, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, n, nil
}

// ImportSnapshot implements model.SnapshotPorter.
func (d *Driver) ImportSnapshot(_ context.Context, key string, r io.Reader) error {
	if !validSnapshotKey.MatchString(key) {
		return fmt.Errorf("import snapshot: invalid key %q", key)
	}
	final := d.snapshotPath(key)
	if exists(final) {
		return nil
	}
	if err := os.MkdirAll(d.snapshotsDir(), 0o700); err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	part := filepath.Join(d.snapshotsDir(), ".part-"+randHex(16)+".img")
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	err = loopdisk.Import(r, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(part, final)
	}
	if err == nil {
		err = syncDir(d.snapshotsDir())
	}
	if err != nil {
		_ = os.Remove(part)
		return fmt.Errorf("import snapshot %s: %w", key, err)
	}
	return nil
}

// HasSnapshot implements model.SnapshotPorter.
func (d *Driver) HasSnapshot(_ context.Context, key string) (bool, error) {
	if !validSnapshotKey.MatchString(key) {
		return false, fmt.Errorf("snapshot: invalid key %q", key)
	}
	_, err := os.Stat(d.snapshotPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
