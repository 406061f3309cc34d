//go:build unix && !linux

package sidecar

// fsUser is who file work runs as. Switching filesystem ids per thread
// needs Linux; sandboxes only run there, so elsewhere file work runs as the
// sidecar's own user (fsuser_linux.go says why and how).
type fsUser struct{}

func newFSUser(*RunAs) (fsUser, error) { return fsUser{}, nil }

func (fsUser) do(fn func() error) error { return fn() }
