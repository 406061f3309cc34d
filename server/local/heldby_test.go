//go:build linux

package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// heldBy reports whether another open file holds the lease lock of the
// range at base in dir.
func heldBy(t *testing.T, dir string, base int) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(base)), os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open lease file: %v", err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return false
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("lock lease file: %v", err)
	}
	return true
}
