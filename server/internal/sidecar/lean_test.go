package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
)

// leanServer serves h on a unix socket and returns a leanTransport to it,
// with its dials and the fallback's counted.
type leanServer struct {
	t        *leanTransport
	dials    atomic.Int64 // by leanTransport
	fallback atomic.Int64 // by the Transport it wraps
	srv      *http.Server
}

func newLeanServer(t *testing.T, h http.Handler) *leanServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ls := &leanServer{srv: &http.Server{Handler: h}}
	go func() { _ = ls.srv.Serve(ln) }()
	t.Cleanup(func() { _ = ls.srv.Close() })
	dial := func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}
	ls.t = &leanTransport{
		dial: func(ctx context.Context) (net.Conn, error) { ls.dials.Add(1); return dial(ctx) },
		fallback: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			ls.fallback.Add(1)
			return dial(ctx)
		}},
	}
	t.Cleanup(ls.t.CloseIdleConnections)
	return ls
}

func (ls *leanServer) do(t *testing.T, ctx context.Context, method, path string, body io.Reader) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://sidecar"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: ls.t}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestLeanTransportReusesOneConnection(t *testing.T) {
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/stream": // chunked, flushed in parts
			for i := range 3 {
				fmt.Fprintf(w, "part %d;", i)
				w.(http.Flusher).Flush()
			}
		default:
			fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), b)
		}
	}))
	ctx := context.Background()
	type answer struct {
		Status int
		Body   string
	}
	var got []answer
	for _, c := range []struct {
		method, path string
		body         io.Reader
	}{
		{"POST", "/exec", strings.NewReader(`{"command":"true"}`)},
		{"GET", "/view?path=a%20b", nil},
		{"DELETE", "/empty", nil},
		{"GET", "/stream", nil},
		{"POST", "/exec", bytes.NewReader(bytes.Repeat([]byte("x"), leanMaxBody))},
	} {
		status, body, err := ls.do(t, ctx, c.method, c.path, c.body)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		got = append(got, answer{status, body})
	}
	want := []answer{
		{200, `POST /exec {"command":"true"}`},
		{200, "GET /view?path=a%20b "},
		{204, ""},
		{200, "part 0;part 1;part 2;"},
		{200, "POST /exec " + strings.Repeat("x", leanMaxBody)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if n, f := ls.dials.Load(), ls.fallback.Load(); n != 1 || f != 0 {
		t.Errorf("dials = %d, fallback dials = %d; want one connection for all, none by the fallback", n, f)
	}
}

func TestLeanTransportFallsBack(t *testing.T) {
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	ctx := context.Background()
	big := bytes.NewReader(bytes.Repeat([]byte("x"), leanMaxBody+1))
	unknown := io.MultiReader(strings.NewReader("abc")) // not a type NewRequest can size
	for _, body := range []io.Reader{big, unknown} {
		if _, _, err := ls.do(t, ctx, "PUT", "/upload", body); err != nil {
			t.Fatal(err)
		}
	}
	if n, f := ls.dials.Load(), ls.fallback.Load(); n != 0 || f != 1 {
		t.Errorf("dials = %d, fallback dials = %d; want uploads by the fallback alone", n, f)
	}
}

// TestLeanTransportCancel: a request whose context ends while the sidecar
// works, before its answer or amid a streamed one, ends at once with the
// context's error, and the sidecar sees its client go away (an exec's
// command is then killed); the connection is not reused.
func TestLeanTransportCancel(t *testing.T) {
	var gone, started chan struct{}
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			_, _ = io.Copy(io.Discard, r.Body) // as the sidecar's handlers do; net/http then watches the connection
			if r.URL.RawQuery == "stream" {
				w.Header().Set("Content-Type", "application/x-ndjson")
				fmt.Fprintln(w, "first")
				w.(http.Flusher).Flush()
			}
			close(started)
			<-r.Context().Done()
			close(gone)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			gone, started = make(chan struct{}), make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url := "http://sidecar/slow"
			if stream {
				url += "?stream"
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("{}"))
			if !stream {
				// Ended while RoundTrip waits for the answer.
				go func() { <-started; cancel() }()
				resp, err := ls.t.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("RoundTrip answered %s, want an error", resp.Status)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			} else {
				resp, err := ls.t.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil || line != "first\n" {
					t.Fatalf("first line %q, %v", line, err)
				}
				cancel()
				_, err = resp.Body.Read(make([]byte, 10))
				resp.Body.Close()
				if !errors.Is(err, context.Canceled) {
					t.Errorf("read after cancel: %v, want context.Canceled", err)
				}
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second): // a bound on a hang, not a timing
				t.Fatal("the server did not see its client go away")
			}
			ls.t.mu.Lock()
			idle := len(ls.t.idle)
			ls.t.mu.Unlock()
			if idle != 0 {
				t.Errorf("%d idle connections, want the cancelled request's closed", idle)
			}
			if _, body, err := ls.do(t, context.Background(), "GET", "/", nil); err != nil || body != "ok" {
				t.Fatalf("next request: %q, %v", body, err)
			}
		})
	}
}

// TestLeanTransportStaleConnection: an idle connection the sidecar closed
// (a restart, its idle timeout) is not used; the request dials anew.
func TestLeanTransportStaleConnection(t *testing.T) {
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	ls.srv.SetKeepAlivesEnabled(true)
	ctx := context.Background()
	if _, _, err := ls.do(t, ctx, "GET", "/", nil); err != nil {
		t.Fatal(err)
	}
	// The server closes its idle connections; the pooled one is now dead.
	ls.srv.SetKeepAlivesEnabled(false) // closes idle connections
	for range 1000 {
		ls.t.mu.Lock()
		open := idleOpen(ls.t.idle[0].conn)
		ls.t.mu.Unlock()
		if !open {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ls.srv.SetKeepAlivesEnabled(true)
	if _, body, err := ls.do(t, ctx, "POST", "/exec", strings.NewReader("{}")); err != nil || body != "ok" {
		t.Fatalf("after the close: %q, %v", body, err)
	}
	if n := ls.dials.Load(); n != 2 {
		t.Errorf("dials = %d, want 2", n)
	}
}

// TestLeanTransportEarlyClose: a body closed before its end closes its
// connection, whose unread rest would be taken for the next answer.
func TestLeanTransportEarlyClose(t *testing.T) {
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("y", 100<<10))
	}))
	req, _ := http.NewRequest("GET", "http://sidecar/big", nil)
	resp, err := ls.t.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, body, err := ls.do(t, context.Background(), "GET", "/", nil); err != nil || len(body) != 100<<10 {
		t.Fatalf("next: %d bytes, %v", len(body), err)
	}
	if n := ls.dials.Load(); n != 2 {
		t.Errorf("dials = %d, want 2", n)
	}
}

// FuzzLeanTransportAnswer: whatever bytes a sidecar answers with,
// RoundTrip and the body's reads return (an answer or an error), never
// panic or hang, and a connection goes back to the pool only after a
// whole, well-framed answer with nothing after it.
func FuzzLeanTransportAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end",
		"garbage\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		var pooled *leanConn
		tr := &leanTransport{fallback: &http.Transport{}}
		tr.dial = func(context.Context) (net.Conn, error) {
			c, s := net.Pipe()
			go func() {
				defer s.Close()
				if _, err := http.ReadRequest(bufio.NewReader(s)); err != nil {
					return
				}
				_, _ = s.Write(answer)
			}()
			return c, nil
		}
		req, _ := http.NewRequest("POST", "http://sidecar/exec", strings.NewReader(`{"command":"true"}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tr.mu.Lock()
		if len(tr.idle) > 0 {
			pooled = tr.idle[0]
		}
		tr.mu.Unlock()
		if pooled == nil {
			return
		}
		defer pooled.conn.Close()
		if pooled.br.Buffered() != 0 || resp.Close {
			t.Errorf("pooled a connection with %d bytes unread, Close=%v", pooled.br.Buffered(), resp.Close)
		}
	})
}

// TestClientsOpen: a connection opened ahead (a warm pool member's) is the
// one the first request uses.
func TestClientsOpen(t *testing.T) {
	var conns atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	cs := NewClients()
	t.Cleanup(func() { cs.Forget("sb") })
	ep := model.Endpoint{Network: "tcp", Address: ln.Addr().String(), Token: "t"}
	if err := cs.Open(context.Background(), "sb", ep); err != nil {
		t.Fatal(err)
	}
	cl, err := cs.Client("sb", ep)
	if err != nil {
		t.Fatal(err)
	}
	tr := cl.Transport.(protocolTransport).rt.(*leanTransport)
	tr.mu.Lock()
	idle := len(tr.idle)
	tr.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle connections after Open, want 1", idle)
	}
	for range 3 {
		resp, err := cl.Post("http://sidecar/exec", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want the one opened ahead", n)
	}
}
