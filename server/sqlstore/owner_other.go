//go:build !unix

package sqlstore

import (
	"errors"
	"os"
)

// ErrInUse is returned by Open when another process holds the SQLite
// database (owner_unix.go); without flock it is never returned.
var ErrInUse = errors.New("the database is in use by another process")

// lockOwner takes no lock where there is no flock.
func lockOwner(string) (*os.File, error) { return nil, nil }
