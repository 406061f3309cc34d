package local

import (
	"bytes"
	"context"
	"encoding/binary"
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
// plane keeps in object storage when one is configured: the image's runs
// of data without its holes, so a 10 GiB disk holding 100 MiB costs
// about 100 MiB in the bucket.
//
//	"BXKIMG1\n"                    magic, 8 bytes
//	size                          the image's length, uint64 big-endian
//	{offset, length, bytes}…      each run of data, in order, none overlapping
//	{size, 0}                     the end
//
// A restore on a host without the image (ImportSnapshot) writes the runs
// into a sparse file of that length under the same key.

var _ model.SnapshotPorter = (*Driver)(nil)

const (
	portMagic = "BXKIMG1\n"
	// maxPortSize bounds the image length an import accepts: larger than
	// any disk the driver makes.
	maxPortSize = 1 << 44
)

// ExportSnapshot implements model.SnapshotPorter.
func (d *Driver) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	if !validSnapshotKey.MatchString(key) {
		return nil, 0, fmt.Errorf("export snapshot: invalid key %q", key)
	}
	f, err := os.Open(d.snapshotPath(key))
	if err != nil {
		return nil, 0, fmt.Errorf("export snapshot: %w", err)
	}
	r, n, err := exportImage(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("export snapshot %s: %w", key, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, n, nil
}

// exportImage returns f's portable form and its length.
func exportImage(f *os.File) (io.Reader, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	head := make([]byte, 0, 16)
	head = append(head, portMagic...)
	head = binary.BigEndian.AppendUint64(head, uint64(size))
	parts := []io.Reader{bytes.NewReader(head)}
	total := int64(len(head))
	err = loopdisk.DataRuns(f, size, func(off, n int64) error {
		parts = append(parts, bytes.NewReader(runHeader(off, n)), io.NewSectionReader(f, off, n))
		total += 16 + n
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	parts = append(parts, bytes.NewReader(runHeader(size, 0)))
	return io.MultiReader(parts...), total + 16, nil
}

func runHeader(off, n int64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(off))
	return binary.BigEndian.AppendUint64(b, uint64(n))
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
	err = importImage(r, f)
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

// sparseFile is what importImage writes: a file it sizes and fills.
type sparseFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// importImage reads a portable image from r into f, checking that each
// run lies inside the image, after the one before, and holds its length.
func importImage(r io.Reader, f sparseFile) error {
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return fmt.Errorf("read image header: %w", err)
	}
	if string(hdr[:8]) != portMagic {
		return errors.New("not a boxkite snapshot image")
	}
	size := binary.BigEndian.Uint64(hdr[8:])
	if size > maxPortSize {
		return fmt.Errorf("image of %d bytes is larger than any disk", size)
	}
	if err := f.Truncate(int64(size)); err != nil {
		return err
	}
	next := uint64(0) // the least offset the next run may start at
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return fmt.Errorf("read image run: %w", err)
		}
		off, n := binary.BigEndian.Uint64(hdr[:8]), binary.BigEndian.Uint64(hdr[8:])
		if n == 0 {
			if off != size {
				return fmt.Errorf("image ends at %d, its size is %d", off, size)
			}
			return nil
		}
		if off < next || off > size || n > size-off {
			return fmt.Errorf("image run %d+%d out of order or past its size %d", off, n, size)
		}
		w := io.NewOffsetWriter(f, int64(off))
		if _, err := io.CopyN(w, r, int64(n)); err != nil {
			return fmt.Errorf("read image run: %w", err)
		}
		next = off + n
	}
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
