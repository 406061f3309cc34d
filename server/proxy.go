package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// sidecarCall is one request to a sandbox's sidecar made on behalf of a
// client request, and what came of it.
type sidecarCall struct {
	method  string
	path    string     // the sidecar's path, e.g. "/view"
	query   url.Values // forwarded as is
	body    io.Reader  // nil for none; not buffered, so uploads stream
	length  int64      // of body; -1 when unknown (sent chunked)
	timeout time.Duration
	// tap, when set, sees every chunk of the response body as it passes,
	// whatever the status (callers check status before trusting it).
	tap func([]byte)
	// handOver, when set, makes an event stream outlive its client's
	// credential: when that is revoked, forward returns errHandedOver at
	// once and the rest of the answer is read in the background, through
	// tap, after which handOver runs (revoke_stream.go). A streamed exec's
	// command runs on that way.
	handOver func(err error)
	client   context.Context // the client request's context, for handOver
	// survive: the request to the sidecar does not end when the client's
	// credential is revoked, only when the client goes away (an exec's
	// command runs on; set with handOver, and for a JSON exec).
	survive bool

	status   int
	bytesOut int64  // response body bytes sent to the client
	captured []byte // an application/json response body, for the audit detail
	overflow bool   // the JSON body was larger than maxCapture and captured is empty
}

// maxCapture bounds how much of a JSON response is kept to derive an audit
// detail from (counts of matches, entries, …). Larger responses still pass
// through whole; their detail lacks those counts.
const maxCapture = 8 << 20

// errStreamBroken is returned by forward when the response had started and
// could not be finished: no error envelope can be sent any more.
var errStreamBroken = errors.New("sidecar response broken off")

// errSidecarCut marks an errStreamBroken whose cause is the sidecar's side
// (its stream ended early or failed), not the client's.
var errSidecarCut = errors.New("sidecar stream cut")

// Response headers of the sidecar that reach the client. Everything else
// (its request id, its Date, hop-by-hop headers) is ours to set.
var passResponseHeaders = []string{
	"Content-Type", "Content-Length", "Content-Disposition", "Content-Encoding",
	"Cache-Control", "X-Accel-Buffering", "Retry-After",
}

// Request headers of the client that reach the sidecar. Never
// Authorization: the API key stays at the control plane.
var passRequestHeaders = []string{"Content-Type", "Content-Encoding", "Accept", "Last-Event-ID"}

// forward sends c to the sandbox's sidecar and copies the answer back:
// status, the headers above and the body, unchanged, so the sidecar's
// error envelopes reach the client as they are. Neither body is buffered;
// event streams (SSE, NDJSON) are flushed chunk by chunk, other bodies once
// at the end, so the client has the whole answer before the caller goes
// on to write the audit entry.
//
// An unreachable sidecar is a 502 sandbox_operation_failed. A failure
// after the response started returns errStreamBroken; the caller must
// then abort the connection (abortResponse) so a cut-off body is not
// mistaken for a whole one.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, sb *model.Sandbox, c *sidecarCall) error {
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if c.handOver != nil || c.survive {
		c.client = r.Context()
		ctx, cancel = survivingContext(ctx)
	}
	if c.timeout > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, c.timeout)
		cancelParent := cancel
		cancel = func() { cancelTimeout(); cancelParent() }
	}
	if err := s.frozenAnswer(sb.ID); err != nil {
		cancel()
		return err
	}
	ctx, untrack := s.calls.track(ctx, sb.ID) // a freeze ends it (frozen.go)
	cancelRest := cancel
	cancel = func() { untrack(); cancelRest() }
	handedOver := false // then the background reader owns ctx and the body
	defer func() {
		if !handedOver {
			cancel()
		}
	}()
	client, err := s.sidecars.client(sb.ID, sb.Endpoint)
	if err != nil {
		s.log.ErrorContext(ctx, "sidecar client", "sandbox", sb.ID, "err", err)
		return sandboxFailed("reach")
	}
	u := "http://sidecar" + c.path
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	body := c.body
	if body != nil && c.length == 0 {
		body = http.NoBody // a zero length with a body would be read as "unknown"
	}
	up, err := http.NewRequestWithContext(ctx, c.method, u, body)
	if err != nil {
		return fmt.Errorf("build sidecar request: %w", err)
	}
	if body != nil && body != http.NoBody {
		up.ContentLength = c.length
	}
	for _, h := range passRequestHeaders {
		if v := r.Header.Get(h); v != "" {
			up.Header.Set(h, v)
		}
	}
	up.Header.Set("X-Sidecar-Auth-Token", sb.Endpoint.Token)
	if id := httpx.RequestID(ctx); id != "" {
		up.Header.Set("X-Request-ID", id)
	}
	resp, err := client.Do(up)
	if err != nil {
		if ae, ok := context.Cause(ctx).(*api.Error); ok {
			return ae // the sandbox froze under the call
		}
		if ae := apihttp.TimedOut(r); ae != nil {
			return ae // the client's upload stalled
		}
		if ae, ok := errors.AsType[*api.Error](err); ok {
			return ae // reading the client's body failed otherwise
		}
		if errors.Is(context.Cause(r.Context()), errCredentialRevoked) {
			return errStreamRevoked // a long poll (files/watch) of a revoked key
		}
		if r.Context().Err() != nil {
			return fmt.Errorf("client went away: %w", r.Context().Err())
		}
		s.log.ErrorContext(ctx, "sidecar request failed", "sandbox", sb.ID, "path", c.path, "err", err)
		return s.unreachable(r.Context(), sb)
	}
	c.status = resp.StatusCode
	err = s.copyResponse(w, resp, c)
	if h, ok := errors.AsType[*handover](err); ok {
		handedOver = true
		go h.drain(resp.Body, cancel, c)
		return errHandedOver
	}
	resp.Body.Close()
	return err
}

func (s *Server) copyResponse(w http.ResponseWriter, resp *http.Response, c *sidecarCall) error {
	for _, h := range passResponseHeaders {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	ct := resp.Header.Get("Content-Type")
	events := strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, api.ContentTypeNDJSON)
	if events {
		// Sent chunked: the server may end a stream with an event of its
		// own (an error), so the sidecar's length is not the client's.
		w.Header().Del("Content-Length")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no") // tell reverse proxies in front not to buffer
	}
	var capture *bytes.Buffer
	if strings.HasPrefix(ct, "application/json") {
		capture = &bytes.Buffer{}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	if events {
		_ = rc.Flush() // send the headers now: the first event may take a while
		if c.handOver != nil {
			return copyPumped(w, rc, resp.Body, c)
		}
	}
	// One buffer per proxied call would be most of what the proxy
	// allocates (32 KiB zeroed per exec), so they are recycled.
	bp, _ := s.copyBufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 32<<10)
		bp = &b
	}
	defer s.copyBufs.Put(bp)
	buf := *bp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if c.tap != nil {
				c.tap(chunk)
			}
			if capture != nil && !c.overflow {
				if capture.Len()+n > maxCapture {
					c.overflow, capture = true, nil
				} else {
					capture.Write(chunk)
				}
			}
			if _, err := w.Write(chunk); err != nil {
				return fmt.Errorf("%w: write to client: %w", errStreamBroken, err)
			}
			c.bytesOut += int64(n)
			if events {
				if err := rc.Flush(); err != nil {
					return fmt.Errorf("%w: flush to client: %w", errStreamBroken, err)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%w: %w: read sidecar: %w", errStreamBroken, errSidecarCut, rerr)
		}
	}
	if capture != nil {
		c.captured = capture.Bytes()
	}
	// Hand the client the end of the body now, not when the handler
	// returns after the audit write.
	_ = rc.Flush()
	return nil
}

// abortResponse ends a response whose body already started and cannot be
// finished: the connection is dropped, so the client sees a broken
// transfer rather than a short body that looks complete.
func (s *Server) abortResponse(r *http.Request, err error) {
	s.log.WarnContext(r.Context(), "response broken off", "method", r.Method, "path", r.URL.Path, "err", err)
	panic(http.ErrAbortHandler)
}

// countingReader counts the bytes read through it (an upload's size).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// lineTap returns a tap that calls fn with every complete line of a
// stream, without its newline. Lines longer than maxLine are skipped: the
// events worth parsing (exit events) are short.
func lineTap(maxLine int, fn func(line []byte)) func([]byte) {
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
