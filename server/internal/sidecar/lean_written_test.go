package sidecar

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/server/model"
)

// countingConn counts the bytes written to the socket; with fail set it
// writes nothing and fails, as a connection the sidecar closed would.
type countingConn struct {
	net.Conn
	wrote *atomic.Int64
	fail  bool
}

func (c countingConn) Write(p []byte) (int, error) {
	if c.fail {
		return 0, errors.New("write refused by the test")
	}
	n, err := c.Conn.Write(p)
	c.wrote.Add(int64(n))
	return n, err
}

// TestLeanTransportRequestWritten: model.WithRequestWritten's function is
// called once per request, after the whole request has been written to
// the socket (no byte of it is written after the call) and before the
// answer is returned: the warm claim commits its row on this signal
// (server/local adopt), so a call while the request sits in the writer's
// buffer (where httptrace's WroteRequest comes) would let a crash lose a
// claim whose row is committed. A request the transport could not write,
// or one it leaves to the fallback Transport, never calls it.
func TestLeanTransportRequestWritten(t *testing.T) {
	t.Parallel()
	ls := newLeanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	var wrote atomic.Int64
	fail := false
	dial := ls.t.dial
	ls.t.dial = func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: conn, wrote: &wrote, fail: fail}, nil
	}
	for _, tt := range []struct {
		name      string
		body      string
		fail      bool
		wantCalls int
	}{
		{name: "claim", body: `{"token":"t"}`, wantCalls: 1},
		{name: "no body", wantCalls: 1},
		{name: "write fails", body: `{"token":"t"}`, fail: true},
		{name: "fallback", body: strings.Repeat("x", leanMaxBody+1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ls.t.CloseIdleConnections() // each case dials, with its fail
			fail = tt.fail
			wrote.Store(0)
			calls, atCall := 0, int64(0)
			ctx := model.WithRequestWritten(t.Context(), func() { calls++; atCall = wrote.Load() })
			var body io.Reader
			if tt.body != "" {
				body = bytes.NewReader([]byte(tt.body))
			}
			status, _, err := ls.do(t, ctx, http.MethodPost, "/claim", body)
			if tt.fail != (err != nil) {
				t.Fatalf("answer %d, %v; want an error %t", status, err, tt.fail)
			}
			if calls != tt.wantCalls {
				t.Fatalf("called %d times, want %d", calls, tt.wantCalls)
			}
			if calls == 1 && (atCall == 0 || atCall != wrote.Load()) {
				t.Errorf("called with %d bytes on the socket, %d by the end; want all of them before the call", atCall, wrote.Load())
			}
		})
	}
}
