package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// Forward sends c to the sandbox's sidecar and copies the answer back:
// status, the headers above and the body, unchanged, so the sidecar's
// error envelopes reach the client as they are. Neither body is buffered;
// event streams (SSE, NDJSON) are flushed chunk by chunk, other bodies once
// at the end, so the client has the whole answer before the caller goes
// on to write the audit entry.
//
// An unreachable sidecar is a 502 sandbox_operation_failed. A failure
// after the response started returns sidecar.ErrStreamBroken; the caller
// must then abort the connection (AbortResponse) so a cut-off body is not
// mistaken for a whole one.
func (s *Service) Forward(w http.ResponseWriter, r *http.Request, sb *model.Sandbox, c *sidecar.Call) error {
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if c.HandOver != nil || c.Survive {
		c.Client = r.Context()
		ctx, cancel = authz.SurvivingContext(ctx)
	}
	if c.Timeout > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, c.Timeout)
		cancelParent := cancel
		cancel = func() { cancelTimeout(); cancelParent() }
	}
	if err := s.d.FrozenAnswer(sb.ID); err != nil {
		cancel()
		return err
	}
	ctx, untrack := s.d.Calls.Track(ctx, sb.ID) // a freeze, pause or destroy ends it
	if c.Written != nil {
		ctx = withWritten(ctx, c.Written)
	}
	cancelRest := cancel
	cancel = func() { untrack(); cancelRest() }
	handedOver := false // then the background reader owns ctx and the body
	defer func() {
		if !handedOver {
			cancel()
		}
	}()
	client, err := s.d.Sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "sidecar client", "sandbox", sb.ID, "err", err)
		return model.SandboxFailed("reach")
	}
	up, err := sidecarRequest(ctx, r, sb, c)
	if err != nil {
		return err
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
		if errors.Is(context.Cause(r.Context()), authz.ErrCredentialRevoked) {
			return authz.StreamEnded(r.Context()) // a long poll (files/watch) of a revoked or expired key
		}
		if r.Context().Err() != nil {
			return fmt.Errorf("client went away: %w", r.Context().Err())
		}
		s.d.Log.ErrorContext(ctx, "sidecar request failed", "sandbox", sb.ID, "path", c.Path, "err", err)
		return s.d.Unreachable(r.Context(), sb)
	}
	if e := sidecar.Outdated(resp, c.Method, c.Path, sb.ID); e != nil {
		return e
	}
	c.Status = resp.StatusCode
	if c.Answered != nil && resp.StatusCode/100 == 2 {
		c.Answered()
	}
	err = s.copyResponse(w, resp, c)
	if h, ok := errors.AsType[*sidecar.Handover](err); ok {
		handedOver = true
		go h.Drain(resp.Body, cancel, c)
		return sidecar.ErrHandedOver
	}
	resp.Body.Close()
	if ae, ok := context.Cause(ctx).(*api.Error); ok {
		c.Ended = ae // the sandbox paused, froze or is being destroyed under the copy
	}
	return err
}

// withWritten returns ctx whose sidecar request calls written once it is
// written: the lean transport says so through model.RequestWritten once
// it is in the sidecar's socket, net/http's Transport through its client
// trace (with the request perhaps still in its buffer, so written can
// come for a request the sidecar never read: a cut call is taken for one
// that may have run).
func withWritten(ctx context.Context, written func()) context.Context {
	socket := written
	if prev := model.RequestWritten(ctx); prev != nil {
		socket = func() { prev(); written() }
	}
	ctx = model.WithRequestWritten(ctx, socket)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				written()
			}
		},
	})
}

// sidecarRequest builds the request of c to sb's sidecar, with the
// client's headers that pass and sb's token.
func sidecarRequest(ctx context.Context, r *http.Request, sb *model.Sandbox, c *sidecar.Call) (*http.Request, error) {
	u := "http://sidecar" + c.Path
	if len(c.Query) > 0 {
		u += "?" + c.Query.Encode()
	}
	body := c.Body
	if body != nil && c.Length == 0 {
		body = http.NoBody // a zero length with a body would be read as "unknown"
	}
	up, err := http.NewRequestWithContext(ctx, c.Method, u, body)
	if err != nil {
		return nil, fmt.Errorf("build sidecar request: %w", err)
	}
	if body != nil && body != http.NoBody {
		up.ContentLength = c.Length
	}
	for _, h := range sidecar.PassRequestHeaders {
		if v := r.Header.Get(h); v != "" {
			up.Header.Set(h, v)
		}
	}
	up.Header.Set(api.HeaderSidecarToken, sb.Endpoint.Token)
	if c.HostFlush {
		up.Header.Set(api.HeaderSidecarHostFlush, "1")
	}
	if id := httpx.RequestID(ctx); id != "" {
		up.Header.Set("X-Request-ID", id)
	}
	return up, nil
}

func (s *Service) copyResponse(w http.ResponseWriter, resp *http.Response, c *sidecar.Call) error {
	for _, h := range sidecar.PassResponseHeaders {
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
		switch n := resp.ContentLength; {
		case n > sidecar.MaxCapture:
			c.Overflow = true // it would be dropped at MaxCapture anyway
		case n > 0:
			capture = bytes.NewBuffer(make([]byte, 0, n)) // not grown by doubling
		default:
			capture = &bytes.Buffer{}
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	if events {
		_ = rc.Flush() // send the headers now: the first event may take a while
		if c.HandOver != nil {
			return sidecar.CopyPumped(w, rc, resp.Body, c)
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
			if c.Tap != nil {
				c.Tap(chunk)
			}
			if capture != nil && !c.Overflow {
				if capture.Len()+n > sidecar.MaxCapture {
					c.Overflow, capture = true, nil
				} else {
					capture.Write(chunk)
				}
			}
			if _, err := w.Write(chunk); err != nil {
				return fmt.Errorf("%w: write to client: %w", sidecar.ErrStreamBroken, err)
			}
			c.BytesOut += int64(n)
			if events {
				if err := rc.Flush(); err != nil {
					return fmt.Errorf("%w: flush to client: %w", sidecar.ErrStreamBroken, err)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%w: %w: read sidecar: %w", sidecar.ErrStreamBroken, sidecar.ErrCut, rerr)
		}
	}
	if capture != nil {
		c.Captured = capture.Bytes()
	}
	// Hand the client the end of the body now, not when the handler
	// returns after the audit write.
	_ = rc.Flush()
	return nil
}

// AbortResponse ends a response whose body already started and cannot be
// finished: the connection is dropped, so the client sees a broken
// transfer rather than a short body that looks complete.
func (s *Service) AbortResponse(r *http.Request, err error) {
	s.d.Log.WarnContext(r.Context(), "response broken off", "method", r.Method, "path", r.URL.Path, "err", err)
	panic(http.ErrAbortHandler)
}

// readSmallUpload reads ahead an upload whose length the client did not
// say (a chunked body, as the Go client and `curl -T -` send), up to
// sidecar.LeanMaxBody bytes and one more. One that ends within them is
// sent to the sidecar with its length, whole from memory: a body of known
// length that small takes the sidecar client's lean path (the request
// written and the answer read on the handler's goroutine), where a body of
// unknown length goes through net/http's Transport, chunked, with its
// connection goroutines' handoffs (issue 27: every 4 KiB write of `boxkite
// bench` went that way). A longer one streams on as before, the bytes read
// ahead first. The bytes still pass through up, which counts them.
func (s *Service) readSmallUpload(r *http.Request, c *sidecar.Call, up io.Reader) error {
	bp, _ := s.aheadBufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, sidecar.LeanMaxBody+1)
		bp = &b
	}
	defer s.aheadBufs.Put(bp)
	n, err := io.ReadFull(up, *bp)
	// The bytes are copied out of the recycled buffer: a Transport may
	// still be writing the body after the answer came back.
	head := bytes.Clone((*bp)[:n])
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		c.Body, c.Length = bytes.NewReader(head), int64(n)
		return nil
	case err == nil:
		c.Body = io.MultiReader(bytes.NewReader(head), up)
		return nil
	}
	if ae := apihttp.TimedOut(r); ae != nil {
		return ae // the client's upload stalled
	}
	if ae, ok := errors.AsType[*api.Error](err); ok {
		return ae
	}
	if r.Context().Err() != nil {
		return fmt.Errorf("client went away: %w", r.Context().Err())
	}
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "the upload broke off: %v", err)
}
