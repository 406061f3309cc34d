package sidecar

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
)

// ndjson is the media type of a streamed exec answer.
const ndjson = "application/x-ndjson"

// collected gathers a request's output for a JSON answer: stdout and
// stderr together, in order, up to interpreterOutputCap bytes.
type collected struct {
	b         strings.Builder
	truncated bool
}

func (c *collected) running() {}

func (c *collected) output(_ int, text string) {
	room := interpreterOutputCap - c.b.Len()
	if len(text) > room {
		c.truncated = true
		text = text[:max(room, 0)]
		for text != "" && !utf8.ValidString(text[max(len(text)-utf8.UTFMax, 0):]) {
			text = text[:len(text)-1] // not a rune cut in two
		}
	}
	c.b.WriteString(text)
}

// streamed writes a request's output as InterpreterEvent lines, each
// flushed: nothing of it is held, so it has no cap (the code's timeout
// bounds it, and a client that reads slowly slows the code's writes).
type streamed struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	enc     *json.Encoder
	started bool // the headers are out
}

func (s *streamed) running() {
	s.started = true
	s.w.Header().Set("Content-Type", ndjson)
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
}

func (s *streamed) output(fd int, text string) {
	stream := "stdout"
	if fd == 2 {
		stream = "stderr"
	}
	s.send(api.InterpreterEvent{Stream: stream, Text: text})
}

func (s *streamed) send(ev api.InterpreterEvent) {
	_ = s.enc.Encode(ev) // a client gone ends the request's context, which interrupts the code
	_ = s.rc.Flush()
}

// streamInterpreter serves a streamed exec: a failure before the code
// runs is an error answer; once it runs, the headers are out and the
// outcome, or the failure, is the last line.
func streamInterpreter(w http.ResponseWriter, r *http.Request, in *interpreter, req cellRequest, timeout time.Duration) error {
	s := &streamed{w: w, rc: http.NewResponseController(w), enc: json.NewEncoder(w)}
	res, err := in.exec(r.Context(), req, timeout, s)
	switch {
	case err != nil && !s.started:
		return interpreterError(err)
	case err != nil:
		e, ok := errors.AsType[*api.Error](interpreterError(err))
		if !ok {
			e = api.Errorf(http.StatusInternalServerError, api.CodeInternal, "internal error")
		}
		s.send(api.InterpreterEvent{Failed: e})
	default:
		s.send(api.InterpreterEvent{End: &res})
	}
	return nil
}
