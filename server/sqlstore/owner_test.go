//go:build unix

package sqlstore_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore"
)

// A SQLite database is one server's: a second Open of the same file fails
// with ErrInUse while the first is open (the lookup cache relies on it),
// and succeeds once the first has closed.
func TestOpenOwnsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boxkite.db")
	first, err := sqlstore.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{"sqlite:" + path, path, "sqlite:" + filepath.Join(filepath.Dir(path), ".", "boxkite.db")} {
		if s, err := sqlstore.Open(t.Context(), dsn); !errors.Is(err, sqlstore.ErrInUse) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("second Open(%q) = %v, want ErrInUse", dsn, err)
		}
	}
	other, err := sqlstore.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatalf("a second server's own database: %v", err)
	}
	other.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlstore.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open after the owner closed: %v", err)
	}
	again.Close()
}

// twoHandles opens the database twice where several servers may share it
// (Postgres); on SQLite, which one server owns (TestOpenOwnsSQLite), the
// second handle is the first: the concurrency under test is then that of
// one server's goroutines.
func twoHandles(t *testing.T, open func(*testing.T) model.Store) (model.Store, model.Store) {
	t.Helper()
	first := open(t)
	if s, ok := first.(interface{ Shared() bool }); ok && !s.Shared() {
		return first, first
	}
	return first, open(t)
}
