package envd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// ndjson is the media type of the interpreter's streamed answer and of
// /execute's.
const ndjson = "application/x-ndjson"

// relayInterpreter passes the sidecar's streamed answer on to out as
// stdout and stderr lines while the cell runs, and returns its outcome.
// What out holds back (scrubbing) goes out after idleFlush without more
// output. A sidecar that answered in one piece (JSON) has its output
// relayed at the end.
func relayInterpreter(resp *http.Response, out *lineWriter) (api.InterpreterExecResult, error) {
	if resp.Header.Get("Content-Type") != ndjson {
		var res api.InterpreterExecResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			return res, fmt.Errorf("decode interpreter result: %w", err)
		}
		out.output("stdout", res.Stdout)
		res.Stdout = ""
		return res, nil
	}
	events := make(chan eventRead)
	done := make(chan struct{})
	defer close(done)
	go readEvents(resp, events, done)
	idle := time.NewTimer(idleFlush)
	defer idle.Stop()
	for {
		select {
		case <-idle.C:
			out.flush()
			continue
		case e := <-events:
			ev := e.ev
			switch {
			case e.err != nil:
				return api.InterpreterExecResult{}, e.err
			case ev.Failed != nil:
				ev.Failed.Status = http.StatusBadGateway
				return api.InterpreterExecResult{}, ev.Failed
			case ev.End != nil:
				out.output("stdout", ev.End.Stdout) // Node's sends its output with the outcome
				ev.End.Stdout = ""
				return *ev.End, nil
			}
			out.output(ev.Stream, ev.Text)
			idle.Reset(idleFlush)
		}
	}
}

// idleFlush is how long output the scrubber holds back waits for more.
const idleFlush = 200 * time.Millisecond

// eventRead is one line of the streamed answer, or why there is none.
type eventRead struct {
	ev  api.InterpreterEvent
	err error
}

// readEvents decodes resp's lines onto events until the answer ends or
// done is closed.
func readEvents(resp *http.Response, events chan<- eventRead, done <-chan struct{}) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	send := func(e eventRead) bool {
		select {
		case events <- e:
			return true
		case <-done:
			return false
		}
	}
	for sc.Scan() {
		var e eventRead
		if err := json.Unmarshal(sc.Bytes(), &e.ev); err != nil {
			send(eventRead{err: fmt.Errorf("decode interpreter event: %w", err)})
			return
		}
		if !send(e) {
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = errors.New("read interpreter events: the answer ended without an outcome")
	} else {
		err = fmt.Errorf("read interpreter events: %w", err)
	}
	send(eventRead{err: err})
}

// maxEventLine bounds one line of the sidecar's streamed answer (its
// driver sends output in pieces of at most 32 Ki characters).
const maxEventLine = 1 << 20

// lineWriter writes /execute's NDJSON lines, each flushed as it is
// written. Output is passed on as it comes; scrubbed, through a
// tools.StreamRedactor per stream, which holds back an end that could be
// the start of a secret until the next piece (or the end) shows it is
// not; what one stream holds goes out before the other stream's next
// output, so the two keep their order.
type lineWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	scrub  bool
	red    tools.StreamRedactor
	stream string // whose end red holds
}

func newLineWriter(w http.ResponseWriter, scrub bool) *lineWriter {
	return &lineWriter{w: w, rc: http.NewResponseController(w), scrub: scrub}
}

// output passes on a piece of stdout or stderr.
func (o *lineWriter) output(stream, text string) {
	if text == "" || (stream != "stdout" && stream != "stderr") {
		return
	}
	if !o.scrub {
		o.send(stream, text)
		return
	}
	if o.stream != stream {
		o.flush()
		o.stream = stream
	}
	o.send(stream, string(o.red.Write([]byte(text))))
}

// flush sends what the redactor holds.
func (o *lineWriter) flush() {
	if o.scrub {
		o.send(o.stream, string(o.red.Flush()))
	}
}

func (o *lineWriter) send(stream, text string) {
	if text != "" {
		o.line(map[string]any{"type": stream, "text": text, "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
	}
}

// line writes one line and flushes it.
func (o *lineWriter) line(v any) {
	b, _ := json.Marshal(v)
	_, _ = o.w.Write(append(b, '\n'))
	_ = o.rc.Flush()
}
