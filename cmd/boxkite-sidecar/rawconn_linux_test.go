package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestRawConnServes: net/http serves over rawConns as over the unix
// connections they wrap: keep-alive requests on one connection, a body
// larger than the socket's buffer (writes that meet EAGAIN), and a client
// going away ends the handler's context (the sidecar kills an exec's
// command on it).
func TestRawConnServes(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	gone := make(chan struct{})
	// ConnState runs on the server's goroutine; a socket's bytes are no
	// happens-before edge for the race detector, so the test reads the
	// connections through a channel.
	conns := make(chan net.Conn, 4)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			switch r.URL.Path {
			case "/echo":
				_, _ = w.Write(body)
			case "/big":
				_, _ = w.Write(big)
			case "/wait":
				<-r.Context().Done()
				close(gone)
			}
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns <- c
			}
		},
	}
	go func() { _ = srv.Serve(rawListener{ln}) }()
	t.Cleanup(func() { srv.Close() })

	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	do := func(method, path, body string) string {
		t.Helper()
		req, err := http.NewRequest(method, "http://sidecar"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := do("POST", "/echo", "hello"); got != "hello" {
		t.Errorf("echo: %q, want hello", got)
	}
	if got := do("GET", "/big", ""); got != string(big) {
		t.Errorf("big: %d bytes, want %d", len(got), len(big))
	}
	if got := do("POST", "/echo", "again"); got != "again" {
		t.Errorf("echo on the kept-alive connection: %q, want again", got)
	}
	if n := len(conns); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	first := <-conns
	if _, ok := first.(*rawConn); !ok {
		t.Fatalf("served a %T, want a *rawConn", first)
	}

	req, _ := http.NewRequest("POST", "http://sidecar/wait", strings.NewReader("x"))
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-gone // the handler's context ended: the test's timeout is the bound
}
