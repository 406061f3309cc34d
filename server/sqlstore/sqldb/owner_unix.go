//go:build unix

package sqldb

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrInUse is returned by LockOwner when another process holds the SQLite
// database: a SQLite database is one server's alone, and what that server
// keeps in memory rests on it — a Cache sees only its own process's
// writes (Generation), so a second server revoking a key there would go
// unseen by the first. Several servers share a database on Postgres.
var ErrInUse = errors.New("the database is in use by another process")

// LockOwner takes the database's owner lock: an exclusive flock on
// PATH.lock, held until the store closes (or the process dies, which is
// why it is a lock and not a pid file). The descriptor is close-on-exec,
// so no jail or helper the server starts inherits it.
func LockOwner(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("open database %s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("lock database %s: %w", path, err)
	}
	return f, nil
}
