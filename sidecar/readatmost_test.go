package sidecar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAtMost: a read is bounded by the limit the stat was checked
// against. A file appended to after its stat (a log a sandbox process
// writes) is refused as grown, not read whole whatever its size; one that
// fits is read as it is.
func TestReadAtMost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		limit   int64
		wantErr error
	}{
		{"empty", "", 4, nil},
		{"under", "abc", 4, nil},
		{"at the limit", "abcd", 4, nil},
		{"one past", "abcde", 4, errGrew},
		{"far past", strings.Repeat("x", 1<<20), 4, errGrew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := readAtMost(strings.NewReader(tt.content), tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("readAtMost = %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(b) != tt.content {
				t.Errorf("readAtMost = %q, want %q", b, tt.content)
			}
		})
	}

	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("line\n", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readAtMost(f, fi.Size()); !errors.Is(err, errGrew) {
		t.Errorf("readAtMost of a file grown after its stat = %v, want errGrew", err)
	}
}
