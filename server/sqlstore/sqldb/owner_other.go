//go:build !unix

package sqldb

import (
	"errors"
	"os"
)

// ErrInUse is returned by LockOwner when another process holds the
// SQLite database (owner_unix.go); without flock it is never returned.
var ErrInUse = errors.New("the database is in use by another process")

// LockOwner takes no lock where there is no flock.
func LockOwner(string) (*os.File, error) { return nil, nil }
