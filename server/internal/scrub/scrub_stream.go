package scrub

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// Scrubbing of output streams: NDJSON exec events and a process's
// server-sent events. Each stream's text goes through a
// tools.StreamRedactor, which holds back an end that could be the start
// of a secret until more comes; when nothing comes for Exec.Idle (DefaultIdleFlush),
// what is held goes out anyway, so a prompt is not kept from the caller.

// DefaultScrubIdleFlush is how long held-back output waits for more
// before it is sent. A secret printed in two pieces this far apart can
// get through.
const DefaultIdleFlush = 200 * time.Millisecond

// streamScrubber is what the two stream scrubbers share: the writer they
// pass events on to, serialised with the idle flush, and that flush's
// timer.
type Stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	partial []byte // an incomplete line or event, until its end comes
	timer   *time.Timer
	stopped bool
	// through: the answer is not the stream (an error envelope): it
	// passes unchanged.
	through   bool
	kind      string // the Content-Type prefix of the stream
	idleAfter time.Duration
	held      func() bool // whether anything is held back; under mu
	flush     func()      // sends what is held back; under mu
	// maxLine, when not 0, bounds the unit in progress (split): one
	// longer is not held to its end. What is held back goes out, then
	// tooLong's event, and the stream is cut: that unit and all after it
	// are dropped, so no part of a secret the unit carries leaves
	// unscrubbed.
	maxLine int
	tooLong func() // writes the event that says the stream was cut; under mu
	cut     bool
}

func (s *Stream) init(w http.ResponseWriter, kind string, idle time.Duration, held func() bool, flush func()) {
	s.w, s.rc, s.kind, s.idleAfter, s.held, s.flush = w, http.NewResponseController(w), kind, idle, held, flush
	s.timer = time.AfterFunc(time.Hour, s.idle)
	s.timer.Stop()
}

// capLines cuts the stream at a unit longer than maxLine bytes, its
// separator not counted: tooLong then writes the event that says so.
func (s *Stream) capLines(maxLine int, tooLong func()) {
	s.maxLine, s.tooLong = maxLine, tooLong
}

func (s *Stream) Header() http.Header { return s.w.Header() }

func (s *Stream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.through = code/100 != 2 || !strings.HasPrefix(s.w.Header().Get("Content-Type"), s.kind)
	s.w.WriteHeader(code)
}

// FlushError flushes what was passed on.
func (s *Stream) FlushError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rc.Flush()
}

// arm (re)starts the idle flush when something is held; under mu.
func (s *Stream) arm() {
	if !s.stopped && s.held() {
		s.timer.Reset(s.idleAfter)
	}
}

func (s *Stream) idle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.flush()
	_ = s.rc.Flush()
}

// FlushHeld sends what is held back: the stream from the sidecar ended.
// An unfinished last line or event goes out scrubbed as text.
func (s *Stream) FlushHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush()
	if len(s.partial) > 0 {
		_, _ = s.w.Write([]byte(tools.Redact(string(s.partial))))
		s.partial = nil
	}
}

// Stop ends the idle flushing; nothing is written after it returns.
func (s *Stream) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.timer.Stop()
}

// split appends p to what is pending and calls fn with every complete
// unit ending in sep (sep included); under mu. A unit longer than
// maxLine, complete or in progress, cuts the stream (overLine); once cut,
// p is dropped.
func (s *Stream) split(p, sep []byte, fn func(unit []byte)) {
	if s.cut {
		return
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.Index(s.partial, sep)
		if i < 0 {
			break
		}
		if s.overLine(i) {
			return
		}
		unit := append([]byte(nil), s.partial[:i+len(sep)]...)
		s.partial = s.partial[i+len(sep):]
		fn(unit)
	}
	s.overLine(len(s.partial))
}

// overLine cuts the stream when n, the length of the unit in progress,
// is over maxLine: what is held back goes out, then tooLong's event, and
// nothing after; under mu.
func (s *Stream) overLine(n int) bool {
	if s.maxLine <= 0 || n <= s.maxLine {
		return false
	}
	s.partial, s.cut = nil, true
	s.flush()
	s.tooLong()
	return true
}

// NDJSON scrubs an exec's NDJSON stream: the data of stdout and
// stderr events; other events (exit, error) first get what is held back
// sent before them. It holds the line in progress and what the
// redactors hold back, not the stream: a line longer than maxLine is not
// held to its end (Stream.overLine): what was held back goes out, then
// an error event (sandbox_operation_failed), and the rest of the stream
// is dropped, its exit event too. The sidecar's lines are far shorter
// (an event carries at most one read of the command's output, 32 KiB,
// some 192 KiB escaped), whatever the command prints.
type NDJSON struct {
	Stream
	out  map[string]*tools.StreamRedactor // by event type
	errW error
}

// NewNDJSON scrubs an exec's NDJSON stream on its way to w; maxLine (0:
// no cap) bounds the line it holds.
func NewNDJSON(w http.ResponseWriter, idle time.Duration, maxLine int) *NDJSON {
	n := &NDJSON{out: map[string]*tools.StreamRedactor{
		api.EventStdout: {}, api.EventStderr: {},
	}}
	n.init(w, api.ContentTypeNDJSON, idle, n.holding, n.sendHeld)
	n.capLines(maxLine, n.lineTooLong)
	return n
}

// lineTooLong ends the stream with an error event naming the cap; under mu.
func (n *NDJSON) lineTooLong() {
	b, _ := json.Marshal(api.ExecEvent{Type: api.EventError, Error: api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
		"the sandbox's exec stream had a line of more than %s; the rest of it was dropped", sizeText(n.maxLine)).
		WithHint("the sidecar sends output in events of at most 32 KiB, so its stream was broken: run the command again, " +
			"or without Accept: application/x-ndjson for a JSON result")})
	n.write(append(b, '\n'))
}

func (n *NDJSON) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.through {
		return n.w.Write(p)
	}
	n.split(p, []byte("\n"), n.line)
	n.arm()
	if n.errW != nil {
		return 0, n.errW
	}
	return len(p), nil
}

// line handles one event line, newline included.
func (n *NDJSON) line(l []byte) {
	var ev struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if json.Unmarshal(l, &ev) != nil {
		n.write(l)
		return
	}
	sr, output := n.out[ev.Type]
	if !output {
		n.sendHeld()
		n.write(l)
		return
	}
	data := sr.Write([]byte(ev.Data))
	if len(data) == 0 {
		return // all held back
	}
	out, err := rewriteObject(bytes.TrimSuffix(l, []byte("\n")), func(key string, _ json.RawMessage) json.RawMessage {
		if key != "data" {
			return nil
		}
		b, _ := json.Marshal(string(data))
		return b
	})
	if err != nil {
		n.write(l)
		return
	}
	n.write(append(out, '\n'))
}

// sendHeld sends what each stream holds back as its own event; under mu.
func (n *NDJSON) sendHeld() {
	for _, typ := range []string{api.EventStdout, api.EventStderr} {
		if data := n.out[typ].Flush(); len(data) > 0 {
			b, _ := json.Marshal(api.ExecEvent{Type: typ, Data: string(data)})
			n.write(append(b, '\n'))
		}
	}
}

func (n *NDJSON) holding() bool {
	return n.out[api.EventStdout].Held()+n.out[api.EventStderr].Held() > 0
}

func (n *NDJSON) write(b []byte) {
	if n.errW == nil {
		_, n.errW = n.w.Write(b)
	}
}

// redacted reports whether anything in the stream was replaced.
func (n *NDJSON) redacted() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.out[api.EventStdout].Redacted() || n.out[api.EventStderr].Redacted()
}

// SSE scrubs a process's event stream: the stdout_chunk of output
// events, with next_offset pointing past what was sent, so a client that
// resumes from it gets what was held back. It holds the event in
// progress and what the redactor holds back, not the stream: an event
// longer than maxEvent is not held to its end (Stream.overLine): what was
// held back goes out, then an error event (event: error, its data's
// error sandbox_operation_failed, as an exec stream's), and the rest of the stream
// is dropped, its exit event too. The sidecar's events are far shorter
// (one carries at most one read of the process's output).
type SSE struct {
	Stream
	sr     tools.StreamRedactor
	rawEnd int64 // the offset just past the last output byte received
	errW   error
}

// NewSSE scrubs a process's event stream on its way to w; maxEvent (0:
// no cap) bounds the event it holds.
func NewSSE(w http.ResponseWriter, idle time.Duration, maxEvent int) *SSE {
	s := &SSE{}
	s.init(w, "text/event-stream", idle, func() bool { return s.sr.Held() > 0 }, s.sendHeld)
	s.capLines(maxEvent, s.eventTooLong)
	return s
}

// eventTooLong ends the stream with an error event naming the cap; under mu.
func (s *SSE) eventTooLong() {
	b, _ := json.Marshal(api.ProcessEvent{Type: api.ProcessEventError, Error: api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
		"the sandbox's process stream had an event of more than %s; the rest of it was dropped", sizeText(s.maxLine)).
		WithHint("the sidecar sends output in events of one read each, so its stream was broken: " +
			"stream again with ?since_offset= the last output event's next_offset, or read GET …/processes/{pid}/output")})
	s.write([]byte("event: " + api.ProcessEventError + "\ndata: " + string(b) + "\n\n"))
}

func (s *SSE) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.through {
		return s.w.Write(p)
	}
	s.split(p, []byte("\n\n"), s.event)
	s.arm()
	if s.errW != nil {
		return 0, s.errW
	}
	return len(p), nil
}

// event handles one event (or comment), its blank line included.
func (s *SSE) event(e []byte) {
	name, data, ok := sseFields(e)
	if !ok || name != api.ProcessEventOutput {
		if ok && name == api.ProcessEventExit {
			s.sendHeld()
		}
		s.write(e)
		return
	}
	var ev api.ProcessEvent
	if json.Unmarshal(data, &ev) != nil {
		s.write(e)
		return
	}
	if ev.Truncated {
		s.sendHeld() // output was dropped in between: the held end is all there is
	}
	s.rawEnd = ev.NextOffset
	chunk := s.sr.Write([]byte(ev.StdoutChunk))
	if len(chunk) == 0 && !ev.Truncated {
		return // all held back
	}
	s.writeOutput(data, chunk, s.rawEnd-int64(s.sr.Held()))
}

// writeOutput sends the output event data with chunk and next as its
// stdout_chunk and next_offset.
func (s *SSE) writeOutput(data, chunk []byte, next int64) {
	out, err := rewriteObject(data, func(key string, _ json.RawMessage) json.RawMessage {
		switch key {
		case "stdout_chunk":
			b, _ := json.Marshal(string(chunk))
			return b
		case "next_offset":
			return json.RawMessage(strconv.FormatInt(next, 10))
		}
		return nil
	})
	if err != nil {
		return
	}
	s.write([]byte("event: " + api.ProcessEventOutput + "\ndata: " + string(out) + "\n\n"))
}

// sendHeld sends what is held back as an output event; under mu.
func (s *SSE) sendHeld() {
	if s.sr.Held() == 0 {
		return
	}
	chunk := s.sr.Flush()
	b, _ := json.Marshal(api.ProcessEvent{Type: api.ProcessEventOutput, StdoutChunk: string(chunk), NextOffset: s.rawEnd})
	s.writeOutput(b, chunk, s.rawEnd)
}

func (s *SSE) write(b []byte) {
	if s.errW == nil {
		_, s.errW = s.w.Write(b)
	}
}

// sseFields returns the event name and data of one server-sent event; ok
// is false for a comment or anything else without data.
func sseFields(e []byte) (name string, data []byte, ok bool) {
	for _, line := range bytes.Split(bytes.TrimRight(e, "\n"), []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			name = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
			ok = true
		}
	}
	return name, data, ok
}
