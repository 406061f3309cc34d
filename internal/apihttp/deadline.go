package apihttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Default body timeouts.
const (
	DefaultBodyTimeout     = time.Minute
	DefaultBodyIdleTimeout = time.Minute
)

// BodyTimeouts bound how long a request body may take to arrive. They are
// set per request, on the connection's read deadline, and lifted once the
// body has been read to its end: net/http keeps reading the connection in
// the background while a handler answers (to notice a client that left),
// and a deadline still set then would cancel a long exec stream.
type BodyTimeouts struct {
	// Whole bounds an ordinary body, from the request's arrival to its
	// last byte; 0 means DefaultBodyTimeout.
	Whole time.Duration
	// Idle bounds each pause in a streamed upload (see Streaming), which
	// may take as long as it keeps moving; 0 means DefaultBodyIdleTimeout.
	Idle time.Duration
}

func (t BodyTimeouts) withDefaults() BodyTimeouts {
	if t.Whole <= 0 {
		t.Whole = DefaultBodyTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultBodyIdleTimeout
	}
	return t
}

// Apply starts the body deadline of r and returns r with a body that keeps
// it; w must be the writer net/http passed in, or unwrap to it. A read past
// the deadline fails with a 408 request_timeout *api.Error. Requests
// without a body are returned as they are.
func (t BodyTimeouts) Apply(w http.ResponseWriter, r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r
	}
	t = t.withDefaults()
	rc := http.NewResponseController(w)
	deadline := time.Now().Add(t.Whole)
	if rc.SetReadDeadline(deadline) != nil {
		return r // a writer without deadlines (a test recorder): nothing to keep
	}
	b := &timedBody{body: r.Body, rc: rc, t: t}
	b.deadline.Store(deadline.UnixNano())
	r2 := *r
	r2.Body = b
	return &r2
}

// TimedOut returns the 408 request_timeout error when r's body deadline
// has passed, whether or not a read has reported it yet: a proxy's
// transport may give up on the request's cancelled context before the
// read that timed out returns. It returns nil otherwise.
func TimedOut(r *http.Request) *api.Error {
	b, ok := r.Body.(*timedBody)
	if !ok {
		return nil
	}
	if d := b.deadline.Load(); d == 0 || time.Now().UnixNano() < d {
		return nil
	}
	return b.timeoutError()
}

// Streaming switches r's body from the whole-body deadline to the idle
// one, for routes that stream an upload of any size (files/raw,
// files/archive). Call it before reading the body.
func Streaming(r *http.Request) {
	if b, ok := r.Body.(*timedBody); ok {
		b.streaming = true
	}
}

// timedBody keeps a request body's deadline; one goroutine reads it.
type timedBody struct {
	body      io.ReadCloser
	rc        *http.ResponseController
	t         BodyTimeouts
	streaming bool         // set before the first read
	done      bool         // the body ended (or failed)
	deadline  atomic.Int64 // unix nanoseconds of the read deadline; 0 once lifted (TimedOut reads it)
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.done {
		return b.body.Read(p)
	}
	if b.streaming {
		d := time.Now().Add(b.t.Idle)
		b.deadline.Store(d.UnixNano())
		_ = b.rc.SetReadDeadline(d)
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.done = true
		b.deadline.Store(0)
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil:
		// The deadline stays: net/http reads what is left of a body
		// after the handler, and a stalled client must not hold it.
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = b.timeoutError()
		}
	}
	return n, err
}

func (b *timedBody) timeoutError() *api.Error {
	if b.streaming {
		return api.Errorf(http.StatusRequestTimeout, api.CodeRequestTimeout,
			"the upload stalled: no bytes for %v", b.t.Idle).
			WithHint("keep the upload moving; retry on a steadier connection")
	}
	return &api.Error{
		Status: http.StatusRequestTimeout, Code: api.CodeRequestTimeout,
		Message: fmt.Sprintf("the request body did not arrive within %v", b.t.Whole),
		Hint:    "send the whole body at once; stream large files with PUT …/files/raw",
	}
}

func (b *timedBody) Close() error { return b.body.Close() }
