//go:build linux

// Package nstest reads Linux namespaces for tests: which namespace a
// /proc/PID/ns file names and which user namespace owns it, so tests of
// the jail (server/local, internal/securitytest) check who owns a
// sandbox's network namespace the same way.
package nstest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Inode is the inode of the namespace file at path: two paths name the
// same namespace when their inodes are equal.
func Inode(t testing.TB, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// Owner is the inode of the user namespace that owns the namespace at
// path (ioctl NS_GET_USERNS).
func Owner(t testing.TB, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		t.Fatalf("owner of %s: %v", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
