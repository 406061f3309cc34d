package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// A streamed exec outlives the revocation of its client's credential: the
// stream to the client ends within moments, while the command runs on in
// the sandbox, its output read to the end and its audit entry written
// (Call.HandOver). The sidecar would kill the command if its
// request were cancelled, so the request to it does not end with the
// client's, only when the client itself goes away.

// ErrHandedOver is proxy.Forward's answer when the rest of the sidecar's answer
// was handed to a background reader because the client's credential was
// revoked.
var ErrHandedOver = errors.New("the stream's credential was revoked; the rest of it is read in the background")

// pump reads a body in a goroutine of its own, so that copying it to the
// client can also wait for the client's credential to be revoked.
type pump struct {
	chunks chan []byte
	stop   chan struct{} // closed when nobody will read chunks any more
	err    error         // why reading ended; set before chunks is closed
}

func startPump(body io.Reader) *pump {
	p := &pump{chunks: make(chan []byte, 4), stop: make(chan struct{})}
	go func() {
		defer close(p.chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := body.Read(buf)
			if n > 0 {
				select {
				case p.chunks <- buf[:n]:
				case <-p.stop:
					p.err = errors.New("nobody reads the stream")
					return
				}
			}
			if err != nil {
				p.err = err
				return
			}
		}
	}()
	return p
}

// Handover is copyPumped's error when the client's credential was revoked:
// the pump goes on for drain.
type Handover struct{ p *pump }

func (h *Handover) Error() string { return ErrHandedOver.Error() }

// Drain reads the rest of the answer through c.tap, then releases body
// and its context (cancel) and calls c.handOver with why reading ended
// (nil at the end of the answer).
func (h *Handover) Drain(body io.ReadCloser, cancel context.CancelFunc, c *Call) {
	for chunk := range h.p.chunks {
		if c.Tap != nil {
			c.Tap(chunk)
		}
	}
	body.Close()
	cancel()
	err := h.p.err
	if errors.Is(err, io.EOF) {
		err = nil
	}
	c.HandOver(err)
}

// CopyPumped is copyResponse's loop for an event stream with a handOver.
func CopyPumped(w http.ResponseWriter, rc *http.ResponseController, body io.Reader, c *Call) error {
	p := startPump(body)
	for {
		select {
		case chunk, ok := <-p.chunks:
			if !ok {
				if errors.Is(p.err, io.EOF) {
					_ = rc.Flush()
					return nil
				}
				return fmt.Errorf("%w: %w: read sidecar: %w", ErrStreamBroken, ErrCut, p.err)
			}
			if c.Tap != nil {
				c.Tap(chunk)
			}
			if _, err := w.Write(chunk); err != nil {
				close(p.stop)
				return fmt.Errorf("%w: write to client: %w", ErrStreamBroken, err)
			}
			c.BytesOut += int64(len(chunk))
			if err := rc.Flush(); err != nil {
				close(p.stop)
				return fmt.Errorf("%w: flush to client: %w", ErrStreamBroken, err)
			}
		case <-c.Client.Done():
			if errors.Is(context.Cause(c.Client), authz.ErrCredentialRevoked) {
				return &Handover{p: p}
			}
			close(p.stop)
			return fmt.Errorf("%w: client went away", ErrStreamBroken)
		}
	}
}
