package sidecar

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// sinceOffset reads the since_offset query parameter (0 when absent).
func sinceOffset(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("since_offset")
	if v == "" {
		return 0, nil
	}
	off, err := strconv.ParseInt(v, 10, 64)
	if err != nil || off < 0 {
		return 0, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "since_offset must be a non-negative integer, got %q", v).
			WithHint("pass 0 (or leave it out) for all the output kept, or the next_offset of the last answer")
	}
	return off, nil
}

// chunk returns the output of p from off on, with its status. While the
// process runs, a rune split at the end is held back for the next read, so
// a chunk never ends in half a UTF-8 character. The status is read first:
// once it is final, the ring holds all output there will be.
func (p *bgProc) chunk(off int64) (status string, code *int, out []byte, next int64, truncated bool, changed <-chan struct{}) {
	status, code = p.state()
	out, next, truncated, changed = p.out.since(off)
	if status == api.ProcessRunning {
		whole, partial := splitUTF8(out)
		out, next = whole, next-int64(len(partial))
	}
	return status, code, out, next, truncated, changed
}

func (h *Handler) processOutput(w http.ResponseWriter, r *http.Request) error {
	p, err := h.sess.procs.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	off, err := sinceOffset(r)
	if err != nil {
		return err
	}
	status, code, out, next, truncated, _ := p.chunk(off)
	return writeJSON(w, http.StatusOK, api.ProcessOutput{
		Status: status, StdoutChunk: string(out), NextOffset: next, Truncated: truncated, ExitCode: code,
	})
}

// processStream sends a process's output as server-sent events, each write
// pushed as it lands in the ring buffer, and ends with an exit event.
func (h *Handler) processStream(w http.ResponseWriter, r *http.Request) error {
	p, err := h.sess.procs.get(r.PathValue("id"))
	if err != nil {
		return err
	}
	off, err := sinceOffset(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	sse.flush()

	keepAlive := h.sess.limits.KeepAlive
	idle := time.NewTimer(keepAlive)
	defer idle.Stop()
	for sse.err == nil {
		status, code, out, next, truncated, changed := p.chunk(off)
		if len(out) > 0 || truncated {
			sse.event(api.ProcessEventOutput, api.ProcessEvent{
				Type: api.ProcessEventOutput, StdoutChunk: string(out), NextOffset: next, Truncated: truncated,
			})
			off = next
			idle.Reset(keepAlive)
		}
		if status != api.ProcessRunning {
			sse.event(api.ProcessEventExit, api.ProcessEvent{Type: api.ProcessEventExit, Status: status, ExitCode: code})
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
		case <-idle.C:
			sse.comment("keep-alive")
			idle.Reset(keepAlive)
		case <-r.Context().Done():
			return nil
		}
	}
	return nil // the client is gone; the stream cannot carry an error
}

// sseWriter writes server-sent events and flushes each; after the first
// failure it writes nothing more and err says why.
type sseWriter struct {
	w   io.Writer
	rc  *http.ResponseController
	err error
}

func (s *sseWriter) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("encode event: %w", err)
		return
	}
	s.write(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, b))
}

func (s *sseWriter) comment(text string) {
	s.write([]byte(": " + text + "\n\n"))
}

func (s *sseWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, s.err = s.w.Write(b); s.err == nil {
		s.flush()
	}
}

func (s *sseWriter) flush() {
	if s.err == nil {
		s.err = s.rc.Flush()
	}
}
