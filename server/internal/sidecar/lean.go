package sidecar

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boxkite/boxkite/server/model"
)

// leanTransport carries the requests to a local sidecar (its unix socket;
// plain TCP in tests) on the caller's own goroutine: the request is written and its answer
// read on the goroutine that asked, over a kept-alive connection, and an
// idle connection has no goroutine at all.
//
// net/http's Transport gives every connection a writeLoop and a readLoop:
// a request is handed to the first through a channel, the response's
// headers come back from the second through another, and the body's end
// is signalled back to it so it can pool the connection. On this VM (a
// paravirtualised guest, where each wakeup of a parked thread costs tens of
// microseconds) those handoffs were a large part of the control plane's
// share of an exec round trip (issue 27 item 2;
// bench/issue27/session7-frame.md has the counts).
//
// The wire stays HTTP/1.1, written by Request.Write and read by
// http.ReadResponse, so the sidecar's side is unchanged and no parser of
// our own reads the sidecar's answers. What this transport does not do it
// leaves to the Transport it wraps (fallback):
//
//   - requests whose body is large or of unknown length (uploads): written
//     on the caller's goroutine, a body the sidecar stops reading to answer
//     early (a refusal) would block it, where the Transport reads the
//     answer while it writes. A body up to leanMaxBody is always read whole
//     by the sidecar's net/http server, even when the handler refuses it
//     without reading (it discards up to 256 KiB to keep the connection);
//   - upgrades (WebSocket: terminals, previews), whose answer is a
//     connection, not a body.
//
// The kube driver's endpoints (TCP with pinned TLS) keep the Transport
// alone (sidecarTransport):
// issue 27's exec round trip is the local driver's, and its connections
// cross a network where the Transport's handling (TLS, dial retries) is
// worth its goroutines.
//
// Cancellation is the Transport's: when the request's context ends, the
// connection's deadline is set in the past, which ends a blocked write or
// read at once; the connection is then closed (the sidecar sees its client
// go away and ends the command), never pooled.
type leanTransport struct {
	dial     func(ctx context.Context) (net.Conn, error)
	fallback *http.Transport

	mu   sync.Mutex
	idle []*leanConn // most recently used last
}

// leanMaxBody is the largest request body sent by leanTransport; see
// leanTransport for why it must stay under net/http's server discard limit
// of 256 KiB.
const leanMaxBody = 64 << 10

// LeanMaxBody is leanMaxBody for callers that size a body to fit it: a
// body of known length up to it goes through leanTransport, one of unknown
// length (chunked) never does.
const LeanMaxBody = leanMaxBody

// leanMaxIdle bounds the idle connections kept per sandbox, as the
// Transport's MaxIdleConnsPerHost does.
const leanMaxIdle = 16

// leanIdleTimeout is how long an idle connection is kept. It must stay
// below the sidecar server's IdleTimeout (apihttp.IdleTimeout, 2 minutes),
// so that the server never closes a connection as this side reuses it.
const leanIdleTimeout = 90 * time.Second

type leanConn struct {
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // idle since
}

// aLongTimeAgo is a deadline that has passed: setting it ends blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// lean reports whether req is one leanTransport carries.
func lean(req *http.Request) bool {
	if req.Header.Get("Upgrade") != "" || req.Close {
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	return req.ContentLength > 0 && req.ContentLength <= leanMaxBody
}

// RoundTrip sends req and returns its answer, whose body must be read to
// its end or closed, as with any RoundTripper.
func (t *leanTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !lean(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	closeBody := func() {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on errors
		}
	}
	if err := ctx.Err(); err != nil {
		closeBody()
		return nil, err
	}
	lc, err := t.conn(ctx)
	if err != nil {
		closeBody()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = lc.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = lc.conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%w (%w)", cerr, err)
		}
		return nil, err
	}
	if err := req.Write(lc.bw); err != nil { // closes req.Body
		return fail(err)
	}
	if err := lc.bw.Flush(); err != nil {
		return fail(err)
	}
	// The request is in the sidecar's socket now, not in a buffer of ours
	// (net/http's WroteRequest comes before this flush): the warm claim's
	// record waits for this (model.WithRequestWritten).
	if written := model.RequestWritten(ctx); written != nil {
		written()
	}
	resp, err := http.ReadResponse(lc.br, req)
	// 1xx answers (100 Continue, 103 Early Hints) come before the real one.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(lc.br, req)
	}
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		return fail(errors.New("sidecar switched protocols on a request that asked for no upgrade"))
	}
	b := &leanBody{rc: resp.Body, ctx: ctx, t: t, lc: lc, stop: stop, keep: !resp.Close}
	if resp.Body == http.NoBody {
		b.finish(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// conn returns an idle connection that is still open, or a new one.
func (t *leanTransport) conn(ctx context.Context) (*leanConn, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		n := len(t.idle)
		if n == 0 {
			t.mu.Unlock()
			break
		}
		lc := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		if now.Sub(lc.since) < leanIdleTimeout && idleOpen(lc.conn) {
			return lc, nil
		}
		_ = lc.conn.Close()
	}
	conn, err := t.dial(ctx)
	if err != nil {
		return nil, err
	}
	return newLeanConn(conn), nil
}

// idleOpen reports whether an idle connection is still usable: the peer
// has not closed it and sent nothing unasked. The Transport learns this
// from the read its readLoop keeps pending on every idle connection; here
// one non-blocking peek asks the kernel instead, without a goroutine.
func idleOpen(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = n < 0 && errors.Is(rerr, unix.EAGAIN) // nothing to read: open and quiet
		return true                                  // never wait for readiness
	})
	return err == nil && open
}

// open dials a connection ahead of its first request and pools it.
func (t *leanTransport) open(ctx context.Context) error {
	conn, err := t.dial(ctx)
	if err != nil {
		return err
	}
	t.put(newLeanConn(conn))
	return nil
}

func newLeanConn(conn net.Conn) *leanConn {
	return &leanConn{conn: conn, br: bufio.NewReaderSize(conn, 4<<10), bw: bufio.NewWriterSize(conn, 4<<10)}
}

// put pools an idle connection, or closes it when the pool is full.
func (t *leanTransport) put(lc *leanConn) {
	lc.since = time.Now()
	t.mu.Lock()
	if len(t.idle) < leanMaxIdle {
		t.idle = append(t.idle, lc)
		lc = nil
	}
	t.mu.Unlock()
	if lc != nil {
		_ = lc.conn.Close()
	}
}

// CloseIdleConnections closes the pooled connections, the fallback's too
// (http.Client.CloseIdleConnections calls it).
func (t *leanTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, lc := range idle {
		_ = lc.conn.Close()
	}
	t.fallback.CloseIdleConnections()
}

// leanBody is an answer's body: read to its end, it gives its connection
// back to the pool; closed before, it closes the connection, whose rest
// of the answer is unread (as the Transport does).
type leanBody struct {
	rc   io.ReadCloser
	ctx  context.Context // the request's
	t    *leanTransport
	lc   *leanConn
	stop func() bool // ends the watch of the request's context
	keep bool        // the answer allows the connection to be reused

	once sync.Once
}

func (b *leanBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.finish(true)
	case err != nil:
		b.finish(false)
		if cerr := b.ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w (%w)", cerr, err) // the deadline set at the context's end
		}
	}
	return n, err
}

func (b *leanBody) Close() error {
	b.finish(false)
	return nil
}

// finish ends the request: whole says the body was read to its end.
func (b *leanBody) finish(whole bool) {
	b.once.Do(func() {
		// stop is false when the context ended first: the deadline may be
		// set, so the connection is not reused.
		if b.stop() && whole && b.keep && b.lc.br.Buffered() == 0 {
			b.t.put(b.lc)
			return
		}
		_ = b.lc.conn.Close()
	})
}
