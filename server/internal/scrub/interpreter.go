package scrub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// Interpreter scrubs the answer of an interpreter run (POST
// …/interpreter/exec, …/node-interpreter/exec), which is one of two:
//
//   - a JSON result (api.InterpreterExecResult), held whole and scrubbed
//     at Finish (JSONRewriter with InterpreterResult); the sidecar caps
//     its stdout, result and error at api.MaxInterpreterOutput each;
//   - when the client accepts application/x-ndjson, a stream of
//     api.InterpreterEvent lines, scrubbed as they come (InterpreterNDJSON):
//     held is the line in progress, at most maxLine, and what a
//     tools.StreamRedactor holds back, not the stream, whose output has no
//     cap (the run's timeout bounds it).
//
// Which one is known at the answer's header (its Content-Type), so the
// choice is made in WriteHeader.
type Interpreter struct {
	w       http.ResponseWriter
	idle    time.Duration
	maxLine int
	header  http.Header // until WriteHeader
	json    *JSONRewriter
	stream  *InterpreterNDJSON
}

// NewInterpreter scrubs an interpreter run's answer on its way to w; a
// line of a streamed answer over maxLine bytes ends the stream (see
// InterpreterNDJSON).
func NewInterpreter(w http.ResponseWriter, idle time.Duration, maxLine int) *Interpreter {
	return &Interpreter{w: w, idle: idle, maxLine: maxLine, header: http.Header{}}
}

func (i *Interpreter) Header() http.Header {
	switch {
	case i.stream != nil:
		return i.stream.Header()
	case i.json != nil:
		return i.json.Header()
	}
	return i.header
}

func (i *Interpreter) WriteHeader(code int) {
	if i.stream != nil || i.json != nil {
		return
	}
	if code/100 == 2 && strings.HasPrefix(i.header.Get("Content-Type"), api.ContentTypeNDJSON) {
		maps.Copy(i.w.Header(), i.header)
		i.stream = NewInterpreterNDJSON(i.w, i.idle, i.maxLine)
		i.stream.WriteHeader(code)
		return
	}
	i.json = NewJSONRewriter(i.w, InterpreterResult)
	maps.Copy(i.json.header, i.header)
	i.json.WriteHeader(code)
}

func (i *Interpreter) Write(p []byte) (int, error) {
	i.WriteHeader(http.StatusOK)
	if i.stream != nil {
		return i.stream.Write(p)
	}
	return i.json.Write(p)
}

// FlushError flushes what a stream passed on; a JSON answer waits for
// Finish.
func (i *Interpreter) FlushError() error {
	if i.stream != nil {
		return i.stream.FlushError()
	}
	return nil
}

// Finish passes on what is held: the JSON answer, scrubbed, or what the
// stream held back; then the stream's idle flush ends. Call it once the
// sidecar's answer is all in.
func (i *Interpreter) Finish() {
	switch {
	case i.json != nil:
		i.json.Finish()
	case i.stream != nil:
		i.stream.FlushHeld()
		i.stream.Stop()
	}
}

// InterpreterNDJSON scrubs a streamed interpreter run: the text of its
// stdout and stderr lines through a tools.StreamRedactor each (a secret
// split between two lines is caught), the stdout, result and error of
// its last line (end) as a JSON result's. A line longer than maxLine is
// not held to its end: what was held back goes out, then a failed line
// (sandbox_operation_failed) in its place, and the rest of the stream is
// dropped. The sidecar's lines are far shorter (its driver sends output
// in pieces of at most 32 Ki characters; the end's result and error are
// at most api.MaxInterpreterOutput each).
type InterpreterNDJSON struct {
	Stream
	out  map[string]*tools.StreamRedactor // by stream name
	errW error
}

// NewInterpreterNDJSON scrubs a streamed interpreter answer on its way to w.
func NewInterpreterNDJSON(w http.ResponseWriter, idle time.Duration, maxLine int) *InterpreterNDJSON {
	n := &InterpreterNDJSON{out: map[string]*tools.StreamRedactor{"stdout": {}, "stderr": {}}}
	n.init(w, api.ContentTypeNDJSON, idle, n.holding, n.sendHeld)
	n.capLines(maxLine, n.lineTooLong)
	return n
}

// lineTooLong ends the stream with a failed line naming the cap; under mu.
func (n *InterpreterNDJSON) lineTooLong() {
	b, _ := json.Marshal(api.InterpreterEvent{Failed: api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
		"the interpreter's answer had a line of more than %s; the rest of it was dropped", sizeText(n.maxLine)).
		WithHint("print less at once, or write large output to a file and read it with the files API")})
	n.write(append(b, '\n'))
}

func (n *InterpreterNDJSON) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.through {
		return n.w.Write(p)
	}
	n.split(p, []byte("\n"), n.line) // past a line over maxLine, p is dropped
	n.arm()
	if n.errW != nil {
		return 0, n.errW
	}
	return len(p), nil
}

// line handles one line, newline included; under mu.
func (n *InterpreterNDJSON) line(l []byte) {
	var ev struct {
		Stream string          `json:"stream"`
		Text   string          `json:"text"`
		End    json.RawMessage `json:"end"`
	}
	if json.Unmarshal(l, &ev) != nil {
		n.write([]byte(tools.Redact(string(l))))
		return
	}
	sr, output := n.out[ev.Stream]
	if !output {
		// The outcome (or a failure): what was held back goes first.
		n.sendHeld()
		if len(ev.End) == 0 {
			n.write(l)
			return
		}
		out, err := rewriteObject(bytes.TrimSuffix(l, []byte("\n")), func(key string, val json.RawMessage) json.RawMessage {
			if key != "end" {
				return nil
			}
			end, _ := redactFields(val, "stdout", "result", "error")
			return end
		})
		if err != nil {
			n.write([]byte(tools.Redact(string(l))))
			return
		}
		n.write(append(out, '\n'))
		return
	}
	text := sr.Write([]byte(ev.Text))
	if len(text) == 0 {
		return // all held back
	}
	n.writeText(ev.Stream, text)
}

// writeText writes a line of output text of stream; under mu.
func (n *InterpreterNDJSON) writeText(stream string, text []byte) {
	b, _ := json.Marshal(api.InterpreterEvent{Stream: stream, Text: string(text)})
	n.write(append(b, '\n'))
}

// sendHeld sends what each stream holds back as its own line; under mu.
func (n *InterpreterNDJSON) sendHeld() {
	for _, stream := range []string{"stdout", "stderr"} {
		if text := n.out[stream].Flush(); len(text) > 0 {
			n.writeText(stream, text)
		}
	}
}

func (n *InterpreterNDJSON) holding() bool {
	return n.out["stdout"].Held()+n.out["stderr"].Held() > 0
}

func (n *InterpreterNDJSON) write(b []byte) {
	if n.errW == nil {
		_, n.errW = n.w.Write(b)
	}
}

// sizeText is n bytes in KiB, or MiB when whole.
func sizeText(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
