package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
		ln, err := listenUnixAnyLength(t, sock)
		if err != nil {
			t.Fatalf("listen %d-byte path: %v", len(sock), err)
		}
		go func() {
			c, err := ln.Accept()
			if err == nil {
				_, _ = c.Write([]byte("ok"))
				c.Close()
			}
		}()
		c, err := DialUnix(context.Background(), &net.Dialer{}, sock)
		if err != nil {
			t.Fatalf("DialUnix(%d-byte path): %v", len(sock), err)
		}
		buf := make([]byte, 2)
		if _, err := c.Read(buf); err != nil || string(buf) != "ok" {
			t.Errorf("read over %d-byte path = %q, %v", len(sock), buf, err)
		}
		c.Close()
		ln.Close()
	}
}

// listenUnixAnyLength listens on path, going through the directory's
// /proc/self/fd entry when path is too long for a socket address.
func listenUnixAnyLength(t *testing.T, path string) (net.Listener, error) {
	t.Helper()
	if len(path) <= maxSunPath {
		return net.Listen("unix", path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return net.Listen("unix", "/proc/self/fd/"+itoa(int(dir.Fd()))+"/"+filepath.Base(path))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
