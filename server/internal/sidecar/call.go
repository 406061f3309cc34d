package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// sidecarCall is one request to a sandbox's sidecar made on behalf of a
// client request, and what came of it.
type Call struct {
	Method  string
	Path    string     // the sidecar's path, e.g. "/view"
	Query   url.Values // forwarded as is
	Body    io.Reader  // nil for none; not buffered, so uploads stream
	Length  int64      // of body; -1 when unknown (sent chunked)
	Timeout time.Duration
	// Tap, when set, sees every chunk of the response body as it passes,
	// whatever the status (callers check status before trusting it).
	Tap func([]byte)
	// HandOver, when set, makes an event stream outlive its client's
	// credential: when that is revoked, forward returns errHandedOver at
	// once and the rest of the answer is read in the background, through
	// tap, after which handOver runs (revoke_stream.go). A streamed exec's
	// command runs on that way.
	HandOver func(err error)
	Client   context.Context // the client request's context, for handOver
	// Survive: the request to the sidecar does not end when the client's
	// credential is revoked, only when the client goes away (an exec's
	// command runs on; set with handOver, and for a JSON exec).
	Survive bool
	// Written, when set, is called once the request has been handed to
	// the sidecar's connection whole (it may be called more than once): a
	// call that fails after it may have run its command all the same.
	Written func()
	// Answered, when set, is called once the sidecar's answer has begun
	// with a 2xx status, before its body is copied (on the caller's
	// goroutine): a JSON exec's command has ended by then, so its disk
	// flush can start while the body is read.
	Answered func()
	// HostFlush tells the sidecar that the host flushes the sandbox's disk
	// before the answer reaches the client, so a file write need not be
	// fsynced there (api.HeaderSidecarHostFlush).
	HostFlush bool

	Status   int
	BytesOut int64  // response body bytes sent to the client
	Captured []byte // an application/json response body, for the audit detail
	Overflow bool   // the JSON body was larger than maxCapture and captured is empty
	// Ended is the answer the server ended the call with while its
	// response was being copied (a pause's, a freeze's, a destroy's:
	// Calls.Cancel's cause), or nil: a stream it cut is answered with it.
	Ended error
}

// MaxCapture bounds how much of a JSON response is kept to derive an audit
// detail from (counts of matches, entries, …). Larger responses still pass
// through whole; their detail lacks those counts.
const MaxCapture = 8 << 20

// ErrStreamBroken is returned by forward when the response had started and
// could not be finished: no error envelope can be sent any more.
var ErrStreamBroken = errors.New("sidecar response broken off")

// errSidecarCut marks an errStreamBroken whose cause is the sidecar's side
// (its stream ended early or failed), not the client's.
var ErrCut = errors.New("sidecar stream cut")

// Response headers of the sidecar that reach the client. Everything else
// (its request id, its Date, hop-by-hop headers) is ours to set.
var PassResponseHeaders = []string{
	"Content-Type", "Content-Length", "Content-Disposition", "Content-Encoding",
	"Cache-Control", "X-Accel-Buffering", "Retry-After",
	api.HeaderExecID, // a streamed exec's, for its signals
}

// Request headers of the client that reach the sidecar. Never
// Authorization: the API key stays at the control plane.
var PassRequestHeaders = []string{"Content-Type", "Content-Encoding", "Accept", "Last-Event-ID"}

// LineTap returns a tap that calls fn with every complete line of a
// stream, without its newline. Lines longer than maxLine are skipped: the
// events worth parsing (exit events) are short.
func LineTap(maxLine int, fn func(line []byte)) func([]byte) {
	var partial []byte
	skipping := false
	return func(p []byte) {
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				if !skipping && len(partial)+len(p) <= maxLine {
					partial = append(partial, p...)
				} else {
					partial, skipping = partial[:0], true
				}
				return
			}
			if !skipping && len(partial)+i <= maxLine {
				fn(append(partial, p[:i]...))
			}
			partial, skipping = partial[:0], false
			p = p[i+1:]
		}
	}
}

// NewRequest is a request for path on a sandbox's sidecar, with the query
// q, for a client of Clients (which dials the sandbox whatever the host).
func NewRequest(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Request, error) {
	u := "http://sidecar" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build sidecar request: %w", err)
	}
	return req, nil
}
