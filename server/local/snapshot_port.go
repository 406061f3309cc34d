//go:build linux

package local

import (
	"context"
	"io"

	"github.com/boxkite/boxkite/server/model"
)

// A snapshot's portable form (model.SnapshotPorter), which the control
// plane keeps in object storage when one is configured:
// snapstore.Store.Export and Import.

var _ model.SnapshotPorter = (*Driver)(nil)

// ExportSnapshot implements model.SnapshotPorter.
func (d *Driver) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	return d.snaps().Export(key)
}

// ImportSnapshot implements model.SnapshotPorter.
func (d *Driver) ImportSnapshot(_ context.Context, key string, r io.Reader) error {
	return d.snaps().Import(key, r)
}

// HasSnapshot implements model.SnapshotPorter.
func (d *Driver) HasSnapshot(_ context.Context, key string) (bool, error) {
	return d.snaps().Has(key)
}
