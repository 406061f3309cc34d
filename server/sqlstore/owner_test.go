//go:build unix

package sqlstore

import (
	"errors"
	"path/filepath"
	"testing"
)

// A SQLite database is one server's: a second Open of the same file fails
// with ErrInUse while the first is open (the lookup cache relies on it),
// and succeeds once the first has closed.
func TestOpenOwnsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxkite.db")
	first, err := Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{"sqlite:" + path, path, "sqlite:" + filepath.Join(filepath.Dir(path), ".", "boxkite.db")} {
		if s, err := Open(t.Context(), dsn); !errors.Is(err, ErrInUse) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("second Open(%q) = %v, want ErrInUse", dsn, err)
		}
	}
	other, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatalf("a second server's own database: %v", err)
	}
	other.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open after the owner closed: %v", err)
	}
	again.Close()
}
