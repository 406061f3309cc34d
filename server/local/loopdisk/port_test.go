//go:build linux

package loopdisk

import (
	"bytes"
	"errors"
	"testing"
)

// memSparse is a SparseFile in memory that keeps only its length and the
// extent written, so a fuzzed size costs nothing.
type memSparse struct {
	size    int64
	written int64
}

func (m *memSparse) Truncate(n int64) error { m.size = n; return nil }

func (m *memSparse) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > m.size {
		return 0, errors.New("write past the image's end")
	}
	m.written += int64(len(p))
	return len(p), nil
}

// FuzzImportImage: no input makes Import write outside the image it
// sized, nor accept runs past its size or out of order.
func FuzzImportImage(f *testing.F) {
	good := append([]byte(portMagic), runHeader(8192, 0)[:8]...)
	good = append(good, runHeader(0, 4)...)
	good = append(good, "abcd"...)
	good = append(good, runHeader(8192, 0)...)
	f.Add(good)
	f.Add([]byte(portMagic))
	f.Add(append([]byte(portMagic), runHeader(1<<62, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &memSparse{}
		err := Import(bytes.NewReader(b), m)
		if m.written > m.size {
			t.Fatalf("wrote %d bytes into an image of %d", m.written, m.size)
		}
		if err == nil && m.size > maxPortSize {
			t.Fatalf("accepted an image of %d bytes", m.size)
		}
	})
}
