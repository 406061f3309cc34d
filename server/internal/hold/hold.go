package hold

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// heldWriter is an http.ResponseWriter for forward that keeps back the
// end of the answer until release.
type Writer interface {
	http.ResponseWriter
	// Release sends what was held back, if the answer started at all.
	Release()
	// Fail drops what was held back, because the operation's audit entry
	// could not be committed, and ends the answer with err where it can:
	// it returns err for the handler to send when nothing was sent yet,
	// or tells the client in the stream itself, or breaks the connection.
	Fail(err error) error
}

// heldResponse keeps a whole JSON answer in memory (an exec result is
// bounded by the sidecar's output caps).
type Response struct {
	w      http.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
}

func NewResponse(w http.ResponseWriter) *Response {
	return &Response{w: w, header: http.Header{}}
}

func (h *Response) Header() http.Header { return h.header }

func (h *Response) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
		// Sized for the body the answer announces, not grown by doubling.
		if n, err := strconv.ParseInt(h.header.Get("Content-Length"), 10, 64); err == nil && n > 0 && n <= maxPresize {
			h.body.Grow(int(n))
		}
	}
}

// maxPresize bounds what WriteHeader sizes the body to ahead of it: an
// exec result's two streams at the sidecar's most, and their quoting.
const maxPresize = 2*api.MaxExecOutput + 1<<20

// Body is the answer held so far; it stays the holder's.
func (h *Response) Body() []byte { return h.body.Bytes() }

// Adopt takes a whole answer's body as it is, instead of a copy of it
// (the scrubber's rewrite of an exec result): the caller gives it up.
func (h *Response) Adopt(status int, body []byte) {
	if h.status == 0 {
		h.status = status
	}
	if h.body.Len() == 0 {
		h.body = *bytes.NewBuffer(body)
		return
	}
	h.body.Write(body)
}

func (h *Response) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(p)
}

// SetStopReason adds "stop_reason": reason to the held JSON result, which
// has none: the control plane's own finding (the sandbox's memory limit
// killed the command), which the sidecar cannot know.
func (h *Response) SetStopReason(reason string) {
	body, ok := withStopReason(h.body.Bytes(), reason)
	if !ok {
		return
	}
	h.body = *bytes.NewBuffer(body)
	if h.header.Get("Content-Length") != "" {
		h.header.Set("Content-Length", strconv.Itoa(len(body)))
	}
}

// withStopReason returns the JSON object that starts line with
// "stop_reason": reason added last, and what followed it; false when line
// does not start with one whole object.
func withStopReason(line []byte, reason string) ([]byte, bool) {
	end := bytes.IndexByte(line, '\n')
	if end < 0 {
		end = len(line)
	}
	obj := bytes.TrimRight(line[:end], " \r\t")
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' || !json.Valid(obj) {
		return nil, false
	}
	field, err := json.Marshal(reason)
	if err != nil {
		return nil, false
	}
	out := make([]byte, 0, len(line)+len(field)+16)
	out = append(out, obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"stop_reason":`...)
	out = append(out, field...)
	out = append(out, '}')
	return append(out, line[len(obj):]...), true
}

// FlushError is a no-op: nothing leaves before release.
func (h *Response) FlushError() error { return nil }

// Fail sends nothing held: the handler answers err instead.
func (h *Response) Fail(err error) error { return err }

func (h *Response) Release() {
	if h.status == 0 {
		return
	}
	for k, v := range h.header {
		h.w.Header()[k] = v
	}
	h.w.WriteHeader(h.status)
	_, _ = h.w.Write(h.body.Bytes())
}

// exitEventPrefix starts the sidecar's exit event line (api.ExecEvent's
// MarshalJSON writes type first).
const exitEventPrefix = `{"type":"exit"`

// exitHolder passes an NDJSON exec stream through line by line as it
// comes, except the line that starts with exitEventPrefix and anything
// after it, which wait for release. A line is let through once it is
// whole: the sidecar writes and flushes whole lines, so this delays
// nothing, and a stream that breaks off mid-line can still end with an
// error event on a line of its own (fail) instead of a cut JSON value.
type Exit struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool   // the answer began (a status was written)
	pending []byte // the line not yet whole, or, once held, the exit event and what follows
	held    bool   // pending starts with the exit event: hold everything from here
}

func NewExit(w http.ResponseWriter) *Exit {
	return &Exit{w: w, rc: http.NewResponseController(w)}
}

func (h *Exit) Header() http.Header { return h.w.Header() }

func (h *Exit) WriteHeader(code int) {
	h.started = true
	h.w.WriteHeader(code)
}

func (h *Exit) Write(p []byte) (int, error) {
	h.started = true
	h.pending = append(h.pending, p...)
	if h.held {
		return len(p), nil
	}
	whole := 0 // pending[:whole] is whole lines, none of them the exit event
	for {
		i := bytes.IndexByte(h.pending[whole:], '\n')
		if i < 0 {
			break
		}
		if bytes.HasPrefix(h.pending[whole:], []byte(exitEventPrefix)) {
			h.held = true
			break
		}
		whole += i + 1
	}
	if whole == 0 {
		return len(p), nil
	}
	_, err := h.w.Write(h.pending[:whole])
	h.pending = append(h.pending[:0], h.pending[whole:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetStopReason adds "stop_reason": reason to the held exit event, which
// has none (see Response.SetStopReason).
func (h *Exit) SetStopReason(reason string) {
	if !h.held {
		return
	}
	if line, ok := withStopReason(h.pending, reason); ok {
		h.pending = line
	}
}

// FlushError flushes what was let through.
func (h *Exit) FlushError() error { return h.rc.Flush() }

// Fail ends the stream with an error event in place of the held exit
// event (whose exit code the error's details carry).
func (h *Exit) Fail(err error) error {
	if !h.started {
		return err
	}
	ae, ok := errors.AsType[*api.Error](err)
	if !ok {
		ae = &api.Error{Code: api.CodeInternal, Message: "internal server error"}
	}
	line, merr := json.Marshal(api.ExecEvent{Type: api.EventError, Error: ae})
	if merr != nil {
		return merr
	}
	h.pending = nil
	_, _ = h.w.Write(append(line, '\n'))
	_ = h.rc.Flush()
	return nil
}

func (h *Exit) Release() {
	if !h.started {
		return
	}
	if len(h.pending) > 0 {
		_, _ = h.w.Write(h.pending)
		h.pending = nil
	}
	_ = h.rc.Flush()
}

// tailHolder is the heldWriter of proxied routes that write an audit
// entry, so a client cannot have the whole answer before the entry is
// committed (the same promise exec keeps, for every audited operation).
// A small JSON answer (the usual one) is held whole, so that if the
// entry cannot be committed the client gets an error instead of it.
// Anything else passes through as it comes except its last byte, which
// waits for release; if the entry fails then, the connection is broken
// so the client never has a complete answer. Event streams are let
// through whole: holding a byte there would delay an event, and a
// stream's end is only signalled when the handler returns.
type Tail struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	header  http.Header // until the answer is known not to be held whole
	status  int         // once WriteHeader was called
	whole   bool        // holding the whole answer in body
	passing bool        // the status went out; bytes pass through
	stream  bool
	body    []byte // the whole answer, or the held last byte
}

// maxHeldWhole bounds the JSON answers held whole.
const maxHeldWhole = 1 << 20

func NewTail(w http.ResponseWriter) *Tail {
	return &Tail{w: w, rc: http.NewResponseController(w), header: http.Header{}}
}

func (h *Tail) Header() http.Header {
	if h.passing {
		return h.w.Header()
	}
	return h.header
}

func (h *Tail) WriteHeader(code int) {
	if h.status != 0 {
		return
	}
	h.status = code
	ct := h.header.Get("Content-Type")
	h.stream = strings.HasPrefix(ct, "text/event-stream") || strings.HasPrefix(ct, api.ContentTypeNDJSON)
	n, _ := strconv.ParseInt(h.header.Get("Content-Length"), 10, 64)
	h.whole = strings.HasPrefix(ct, "application/json") && n <= maxHeldWhole
	if !h.whole {
		h.pass()
	}
}

// pass sends the status and headers; from here bytes pass through.
func (h *Tail) pass() {
	h.passing = true
	maps.Copy(h.w.Header(), h.header)
	h.w.WriteHeader(h.status)
}

func (h *Tail) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	if h.whole {
		h.body = append(h.body, p...)
		if len(h.body) <= maxHeldWhole {
			return len(p), nil
		}
		// Larger than it said: hold only its last byte after all.
		h.whole = false
		held := h.body
		h.body = nil
		h.pass()
		if _, err := h.writeHoldingLast(held); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if h.stream || len(p) == 0 {
		return h.w.Write(p)
	}
	return h.writeHoldingLast(p)
}

// writeHoldingLast writes what was held and p, except p's last byte.
func (h *Tail) writeHoldingLast(p []byte) (int, error) {
	n := len(p)
	if len(h.body) > 0 {
		if _, err := h.w.Write(h.body); err != nil {
			return 0, err
		}
	}
	if _, err := h.w.Write(p[:n-1]); err != nil {
		return 0, err
	}
	h.body = append(h.body[:0], p[n-1])
	return n, nil
}

// FlushError flushes what was let through; an answer held whole waits.
func (h *Tail) FlushError() error {
	if !h.passing {
		return nil
	}
	return h.rc.Flush()
}

func (h *Tail) Release() {
	if h.status == 0 {
		return
	}
	if !h.passing {
		h.pass()
	}
	if len(h.body) > 0 {
		_, _ = h.w.Write(h.body)
		h.body = nil
	}
}

// Fail returns err for the handler to send when the answer was held
// whole; past that, it breaks the connection (http.ErrAbortHandler).
func (h *Tail) Fail(err error) error {
	if !h.passing {
		h.body = nil
		return err
	}
	panic(http.ErrAbortHandler)
}
