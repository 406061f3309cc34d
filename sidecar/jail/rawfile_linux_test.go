package jail

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAndCreateFile: Setup's file helpers behave as the os calls
// they replace: writeFile truncates and writes, createFile makes an empty
// file and leaves an existing one as it is, and both are subject to the
// umask and fail where the directory is missing.
func TestWriteAndCreateFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "passwd")
	if err := os.WriteFile(p, []byte("a much longer old content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(p, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatalf("writeFile: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "root:x:0:0\n" {
		t.Errorf("after writeFile: %q, %v; want the new content alone", b, err)
	}
	if err := createFile(p, 0o644); err != nil {
		t.Fatalf("createFile on an existing file: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "root:x:0:0\n" {
		t.Errorf("createFile changed an existing file: %q, %v", b, err)
	}

	q := filepath.Join(dir, "null")
	if err := createFile(q, 0o644); err != nil {
		t.Fatalf("createFile: %v", err)
	}
	fi, err := os.Lstat(q)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Fatalf("createFile made %v, %v; want an empty regular file", fi, err)
	}
	fresh := filepath.Join(dir, "hosts")
	if err := writeFile(fresh, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatalf("writeFile of a new file: %v", err)
	}
	want, err := os.Create(filepath.Join(dir, "reference"))
	if err != nil {
		t.Fatal(err)
	}
	_ = want.Close()
	ref, _ := os.Stat(want.Name()) // 0666 less the umask, as os would
	for _, p := range []string{q, fresh} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fi.Mode().Perm(), 0o644&ref.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", p, got, want)
		}
	}

	missing := filepath.Join(dir, "no", "such")
	if err := writeFile(missing, []byte("x"), 0o644); err == nil {
		t.Error("writeFile into a missing directory succeeded")
	}
	if err := createFile(missing, 0o644); err == nil {
		t.Error("createFile into a missing directory succeeded")
	}
}

// TestReadFile: readFile reads as os.ReadFile does, a /proc/sys file and
// one longer than its buffer, and a missing file is fs.ErrNotExist
// (openNamespaceLimits skips the limits a kernel lacks on it).
func TestReadFile(t *testing.T) {
	long := filepath.Join(t.TempDir(), "long")
	if err := os.WriteFile(long, bytes.Repeat([]byte("0123456789"), 300), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/proc/sys/fs/inotify/max_user_watches", long} {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("readFile(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := readFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readFile of a missing file: %v, want fs.ErrNotExist", err)
	}
}
