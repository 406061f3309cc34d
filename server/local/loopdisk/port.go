//go:build linux

package loopdisk

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// An image's portable form (Export, Import), the form server/local keeps
// a snapshot in object storage in: the image's runs of data without its
// holes, so a 10 GiB disk holding 100 MiB costs about 100 MiB in the
// bucket.
//
//	"BXKIMG1\n"                    magic, 8 bytes
//	size                          the image's length, uint64 big-endian
//	{offset, length, bytes}…      each run of data, in order, none overlapping
//	{size, 0}                     the end
//
// Import writes the runs into a sparse file of that length.

const (
	portMagic = "BXKIMG1\n"
	// maxPortSize bounds the image length an import accepts: larger than
	// any disk the driver makes.
	maxPortSize = 1 << 44
)

// Export returns f's portable form and its length.
func Export(f *os.File) (io.Reader, int64, error) {
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
	err = DataRuns(f, size, func(off, n int64) error {
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

// SparseFile is what Import writes: a file it sizes and fills.
type SparseFile interface {
	io.WriterAt
	Truncate(size int64) error
}

// Import reads a portable image from r into f, checking that each
// run lies inside the image, after the one before, and holds its length.
func Import(r io.Reader, f SparseFile) error {
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

// HashData hashes f's runs of data, each with its offset and length, and
// the file's size, skipping holes; it returns the hash and the bytes of
// data. Two images with the same data in the same places hash the same.
func HashData(f *os.File) ([]byte, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	h := sha256.New()
	var hdr [16]byte
	var n int64
	err = DataRuns(f, fi.Size(), func(off, size int64) error {
		binary.BigEndian.PutUint64(hdr[:8], uint64(off))
		binary.BigEndian.PutUint64(hdr[8:], uint64(size))
		h.Write(hdr[:])
		if _, err := io.Copy(h, io.NewSectionReader(f, off, size)); err != nil {
			return err
		}
		n += size
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	binary.BigEndian.PutUint64(hdr[:8], uint64(fi.Size()))
	h.Write(hdr[:8])
	return h.Sum(nil), n, nil
}
