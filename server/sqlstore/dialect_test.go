package sqlstore

import (
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"modernc.org/sqlite"
)

// TestMigrationsMirrored: every dialect has the same migrations, so a
// database moved from SQLite to Postgres (or a server switched between
// them) ends up with the same schema version.
func TestMigrationsMirrored(t *testing.T) {
	names := func(d dialect) []string {
		ms, err := loadMigrations(d)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	if diff := cmp.Diff(names(sqliteDialect), names(postgresDialect)); diff != "" {
		t.Errorf("migrations (-sqlite +postgres):\n%s", diff)
	}
}

func TestParseDSN(t *testing.T) {
	tests := []struct {
		dsn, dialect, rest string
		bad                bool
	}{
		{"sqlite:/tmp/x.db", "sqlite", "/tmp/x.db", false},
		{"sqlite:///tmp/x.db", "sqlite", "/tmp/x.db", false},
		{"/tmp/x.db", "sqlite", "/tmp/x.db", false},
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=disable", "postgres", "postgres://u:p@127.0.0.1:5432/db?sslmode=disable", false},
		{"postgresql://u@h/db", "postgres", "postgresql://u@h/db", false},
		{"mysql://u@h/db", "", "", true},
	}
	for _, tt := range tests {
		d, rest, err := parseDSN(tt.dsn)
		if (err != nil) != tt.bad || d.name != tt.dialect || rest != tt.rest {
			t.Errorf("parseDSN(%q) = %q, %q, %v; want %q, %q, error %v", tt.dsn, d.name, rest, err, tt.dialect, tt.rest, tt.bad)
		}
	}
}

// TestSQLiteDurability checks the pragmas every SQLite connection gets:
// WAL, and synchronous=FULL (2), so a commit is synced before the server
// acknowledges what it recorded; and that on Linux the sync is fdatasync
// (sqldb.CommitWithFdatasync), whatever the driver's switch said before.
func TestSQLiteDurability(t *testing.T) {
	fdatasync := runtime.GOOS == "linux"
	if fdatasync {
		if _, err := sqlite.Fdatasync(false); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "boxkite.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := sqlite.FdatasyncEnabled(); got != fdatasync {
		t.Errorf("the driver commits with fdatasync: %v, want %v", got, fdatasync)
	}
	// More connections than one, since pragmas are per connection.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		if conns[i], err = st.db.Conn(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	for i, c := range conns {
		var mode string
		var sync int
		if err := c.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || sync != 2 {
			t.Errorf("connection %d: journal_mode %q synchronous %d, want wal and 2 (FULL)", i, mode, sync)
		}
	}
}
