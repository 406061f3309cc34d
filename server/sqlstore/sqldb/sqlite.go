package sqldb

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
)

// SQLiteDSN prepares the database file and returns the modernc DSN for it.
//
// Every connection gets: a busy timeout (busy), so that a writer waits
// for a lock another process holds instead of failing (the store's own
// writers queue in its write slot, writeslot.go); WAL so readers never
// block the writer; synchronous=FULL, so a commit returns only once the
// WAL is synced (fdatasync on Linux: CommitWithFdatasync) and what the
// server acknowledged survives an OS crash or power loss too, not just a
// crash of the process (NORMAL's promise); foreign keys; and BEGIN
// IMMEDIATE for transactions, so a read-then-write transaction takes the
// write lock up front instead of failing with SQLITE_BUSY when it
// upgrades (busy_timeout cannot retry an upgrade).
func SQLiteDSN(path string, busy time.Duration) (string, error) {
	if path == "" {
		return "", errors.New("empty sqlite path")
	}
	if strings.ContainsAny(path, "?#") || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return "", fmt.Errorf("sqlite path %q: use a plain file path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create database directory: %w", err)
	}
	// The database may hold secrets: create it private. SQLite gives the
	// -wal and -shm files the same mode.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("create database file: %w", err)
	}
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	return path + "?" + q.Encode(), nil
}

// CommitWithFdatasync has SQLite end a commit with fdatasync(2) instead of
// fsync(2), as SQLite's own builds do on Linux (configure finds
// fdatasync; the transpiled library in modernc.org/sqlite keeps the
// source's fsync unless told). Durability is the same: fdatasync writes
// the WAL's frames and whatever metadata reading them back needs (its size,
// when a commit grew it), and leaves out only the timestamps. Those are
// what cost: an audit append (issue 27) rewrites WAL pages in place, and
// fsync then commits ext4's journal for the new mtime, a second device
// flush per commit besides the data's own. The switch is process-wide in
// the driver; every SQLite store sets it the same way, so setting it again
// is harmless. Platforms without fdatasync keep fsync.
func CommitWithFdatasync() {
	// Its only error is ErrFdatasyncUnavailable: such a platform keeps fsync.
	_, _ = sqlite.Fdatasync(true)
}
