package iocount

import (
	"io"
	"strings"
	"testing"
)

// TestReaderCounts: N is the number of bytes read through the reader,
// whatever the read sizes.
func TestReaderCounts(t *testing.T) {
	for _, s := range []string{"", "x", strings.Repeat("boxkite", 10000)} {
		r := &Reader{R: strings.NewReader(s)}
		b, err := io.ReadAll(io.LimitReader(r, int64(len(s))+1))
		if err != nil || string(b) != s {
			t.Fatalf("read back %d bytes, %v", len(b), err)
		}
		if r.N != int64(len(s)) {
			t.Errorf("N = %d, want %d", r.N, len(s))
		}
	}
}
