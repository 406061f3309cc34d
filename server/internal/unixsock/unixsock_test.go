package unixsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// serveOK listens on path (through its directory's descriptor, so any
// length works), answers "ok" to each connection and counts them.
func serveOK(t *testing.T, path string) *atomic.Int32 {
	t.Helper()
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = c.Write([]byte("ok"))
			c.Close()
		}
	}()
	return &n
}

func TestDialUnixLongPath(t *testing.T) {
	for _, depth := range []int{1, 12} { // short and far past sun_path's 107 bytes
		dir := t.TempDir()
		for range depth {
			dir = filepath.Join(dir, strings.Repeat("d", 12))
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, "s.sock")
		serveOK(t, sock)
		c, err := Dial(context.Background(), &net.Dialer{}, sock)
		if err != nil {
			t.Fatalf("Dial(%d-byte path): %v", len(sock), err)
		}
		buf := make([]byte, 2)
		if _, err := c.Read(buf); err != nil || string(buf) != "ok" {
			t.Errorf("read over %d-byte path = %q, %v", len(sock), buf, err)
		}
		c.Close()
	}
}

// TestDialUnixRefusesPlanted: whatever stands at the socket's name
// instead of the server's own socket (a link to another socket, a file,
// a FIFO, a directory, another user's socket), Dial refuses it and
// connects nowhere.
func TestDialUnixRefusesPlanted(t *testing.T) {
	other := filepath.Join(t.TempDir(), "host-only.sock")
	otherConns := serveOK(t, other)
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		root  bool // needs root (chown)
	}{
		{"symlink to another socket", func(t *testing.T, p string) { must(t, os.Symlink(other, p)) }, false},
		{"symlink to nothing", func(t *testing.T, p string) { must(t, os.Symlink(p+".gone", p)) }, false},
		{"regular file", func(t *testing.T, p string) { must(t, os.WriteFile(p, nil, 0o600)) }, false},
		{"fifo", func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o600)) }, false},
		{"directory", func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o700)) }, false},
		{"another user's socket", func(t *testing.T, p string) {
			serveOK(t, p)
			must(t, os.Lchown(p, 201001, 201001))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				if os.Getenv("CI") != "" {
					t.Fatal("needs root")
				}
				t.Skip("needs root")
			}
			p := filepath.Join(t.TempDir(), "sidecar.sock")
			tt.plant(t, p)
			c, err := Dial(context.Background(), &net.Dialer{}, p)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%s) connected", tt.name)
			}
		})
	}
	if n := otherConns.Load(); n != 0 {
		t.Errorf("the other socket got %d connections", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
