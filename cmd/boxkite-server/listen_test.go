package main

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestListenInherited: --listen fd:N serves on the socket boxkite up bound
// and handed over, keeping its address, and refuses a descriptor that is
// not a listening socket.
func TestListenInherited(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ln, err := listen(listenFDPrefix + strconv.Itoa(dupListener(t, held)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held.Close() // up closes its copy once the server runs
	if ln.Addr().String() != held.Addr().String() {
		t.Errorf("serving on %s, want the inherited %s", ln.Addr(), held.Addr())
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", held.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "ok" {
		t.Errorf("read %q, %v from the inherited listener; want ok", b, err)
	}

	notListening, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(notListening)
	for _, tt := range []struct{ addr, want string }{
		{listenFDPrefix + strconv.Itoa(notListening), "not a listening socket"},
		{listenFDPrefix + "1", "3 or more"},
		{listenFDPrefix + "x", "3 or more"},
	} {
		if ln, err := listen(tt.addr); err == nil || !strings.Contains(err.Error(), tt.want) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("listen(%q) = %v, want an error with %q", tt.addr, err, tt.want)
		}
	}
}

// TestListenTaken: a taken address fails with the hint to look for
// another server.
func TestListenTaken(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = listen(held.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(hintOf(err), "another boxkite-server") {
		t.Errorf("listen(taken) = %v (hint %q), want address already in use with a hint", err, hintOf(err))
	}
}

// dupListener is a descriptor of its own for ln's socket, which listen
// takes over (and closes).
func dupListener(t *testing.T, ln net.Listener) int {
	t.Helper()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}
