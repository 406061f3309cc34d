package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// wantsNDJSON reports whether the client asked for a streamed exec.
func wantsNDJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(part); err == nil && mt == api.ContentTypeNDJSON {
				return true
			}
		}
	}
	return false
}

// execStream answers an exec as NDJSON events, flushed as output happens.
func (h *Handler) execStream(w http.ResponseWriter, r *http.Request, spec execSpec) error {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s := &eventWriter{w: w, rc: http.NewResponseController(w), onFail: cancel}
	id, running := h.execs.add()
	defer h.execs.remove(id)
	spec.started = running.started
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set(api.HeaderExecID, id)
	w.WriteHeader(http.StatusOK)
	s.flush() // the client learns the command started before any output

	out := h.run(ctx, spec, s.output)
	running.ended()
	s.finish()
	if msg := out.message(spec); msg != "" {
		s.event(api.ExecEvent{Type: api.EventStderr, Data: msg})
	}
	s.event(api.ExecEvent{
		Type: api.EventExit, ExitCode: out.exitCode, DurationMS: out.duration.Milliseconds(),
		ExecOutputInfo: out.output,
	})
	return nil // once the stream started, failures can only end it early
}

// eventWriter writes NDJSON events from both output readers. It holds back
// a rune split across reads, so no event carries half a UTF-8 character.
type eventWriter struct {
	mu      sync.Mutex
	w       io.Writer
	rc      *http.ResponseController
	onFail  func() // the client is gone: stop the command
	failed  bool
	partial map[string][]byte // per stream: the start of a rune the next read completes
}

func (s *eventWriter) output(stream string, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := append(s.partial[stream], p...)
	whole, rest := splitUTF8(data)
	if s.partial == nil {
		s.partial = map[string][]byte{}
	}
	s.partial[stream] = append([]byte(nil), rest...)
	if len(whole) > 0 {
		s.write(api.ExecEvent{Type: stream, Data: string(whole)})
	}
}

// finish sends what output held back; the command is done.
func (s *eventWriter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, stream := range []string{api.EventStdout, api.EventStderr} {
		if p := s.partial[stream]; len(p) > 0 {
			s.write(api.ExecEvent{Type: stream, Data: string(p)})
		}
	}
	s.partial = nil
}

func (s *eventWriter) event(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(v)
}

// write sends one event line; the caller holds mu.
func (s *eventWriter) write(v any) {
	if s.failed {
		return
	}
	b, err := json.Marshal(v)
	if err == nil {
		_, err = s.w.Write(append(b, '\n'))
	}
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.failed = true
		s.onFail()
	}
}

func (s *eventWriter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rc.Flush(); err != nil {
		s.failed = true
		s.onFail()
	}
}

// splitUTF8 splits p before a trailing incomplete UTF-8 sequence, if any.
// Invalid bytes are not held back: json.Marshal turns them into U+FFFD.
func splitUTF8(p []byte) (whole, partial []byte) {
	for i := len(p) - 1; i >= 0 && i > len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return p, nil
			}
			return p[:i], p[i:]
		}
	}
	return p, nil
}
