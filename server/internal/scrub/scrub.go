// Package scrub removes secrets from what the control plane keeps and
// returns (issue 17, finding 4). Two places get the patterns of
// tools.Redact (reference §4.4):
//
//   - what is stored: the free text of audit details (commands, code,
//     typed input, search patterns), always; the entry then says
//     "redacted": true;
//   - command output returned to a caller: exec results and streams,
//     process output and streams, interpreter results (and through them
//     the hosted MCP tools), unless the account turned it off
//     (Account.KeepOutputSecrets, PATCH /v1/account).
//
// File reads, downloads, archives, watch payloads and a takeover terminal
// are never touched: they stay byte-exact. Scrubbing is a courtesy, not
// a boundary (design/SECURITY.md): it catches what a command prints by
// accident, not what a program sets out to hide.
package scrub

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/tools"
)

// scrubbedDetailKeys are the audit detail fields holding free text that a
// person or an agent wrote: what may carry a secret they typed.
var scrubbedDetailKeys = []string{"command", "code", "input", "pattern", "glob"}

// scrubDetail replaces secret-shaped strings in d's free-text fields and
// sets "redacted": true when any field holds a placeholder.
func Detail(d map[string]any) {
	for _, k := range scrubbedDetailKeys {
		v, ok := d[k].(string)
		if !ok {
			continue
		}
		v = tools.Redact(v)
		d[k] = v
		if strings.Contains(v, "[REDACTED") {
			d["redacted"] = true
		}
	}
}

// rewriteObject returns the JSON object obj with each member's value
// replaced by what fn returns for it (nil keeps it), members in their
// order.
func rewriteObject(obj []byte, fn func(key string, val json.RawMessage) json.RawMessage) ([]byte, error) {
	if out, ok := rewriteValid(obj, fn); ok {
		return out, nil
	}
	return rewriteDecoded(obj, fn)
}

// rewriteDecoded is rewriteObject with a json.Decoder, for what
// rewriteValid leaves.
func rewriteDecoded(obj []byte, fn func(key string, val json.RawMessage) json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if nv := fn(key, val); nv != nil {
			val = nv
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(val)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// redactFields rewrites the string members keys of obj with tools.Redact
// and reports whether anything was replaced. obj comes back unchanged
// when it is not an object.
func redactFields(obj []byte, keys ...string) ([]byte, bool) {
	changed := false
	fn := func(key string, val json.RawMessage) json.RawMessage {
		if !contains(keys, key) {
			return nil
		}
		s, ok := rawString(val)
		if !ok {
			return nil
		}
		r, ch := tools.RedactReport(s)
		if !ch {
			return nil
		}
		changed = true
		b, _ := json.Marshal(r)
		return b
	}
	// Most answers have nothing to replace: they are kept as they are,
	// not copied (issue 27, session 22).
	if out, ok := replaceMembers(obj, fn); ok {
		return out, changed
	}
	out, err := rewriteObject(obj, fn)
	if err != nil {
		return obj, false
	}
	return out, changed
}

// rawString is the JSON string val decoded; a string without escapes is
// read in place (issue 27, session 22: a JSON exec's 16 MiB of stdout was
// copied once more only to be searched), so the result must not outlive
// val nor be kept.
func rawString(val json.RawMessage) (string, bool) {
	if len(val) >= 2 && val[0] == '"' && plainASCII(val[1:len(val)-1]) {
		return unsafe.String(unsafe.SliceData(val[1:]), len(val)-2), true
	}
	var s string
	return s, json.Unmarshal(val, &s) == nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// JSONRewriter buffers a response and, at finish, passes it on with its
// body rewritten by fn when it is a 2xx JSON answer, else unchanged.
type JSONRewriter struct {
	w        http.ResponseWriter
	header   http.Header
	status   int
	body     bytes.Buffer
	fn       func([]byte) []byte
	finished bool
}

func NewJSONRewriter(w http.ResponseWriter, fn func([]byte) []byte) *JSONRewriter {
	return &JSONRewriter{w: w, header: http.Header{}, fn: fn}
}

func (j *JSONRewriter) Header() http.Header { return j.header }

func (j *JSONRewriter) WriteHeader(code int) {
	if j.status == 0 {
		j.status = code
		growFor(&j.body, j.header)
	}
}

// maxPresize bounds what growFor sizes a buffer to ahead of the body: an
// exec result's two streams at the sidecar's most, and their quoting.
const maxPresize = 2*api.MaxExecOutput + 1<<20

// growFor sizes buf for the body h announces (Content-Length), so it is
// not grown by doubling, which leaves up to twice the body allocated.
func growFor(buf *bytes.Buffer, h http.Header) {
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && n > 0 && n <= maxPresize {
		buf.Grow(int(n))
	}
}

// An adopter takes a whole body and keeps it as it is (hold.Response):
// the body is handed over, not copied.
type adopter interface {
	Adopt(status int, body []byte)
}

func (j *JSONRewriter) Write(p []byte) (int, error) {
	j.WriteHeader(http.StatusOK)
	return j.body.Write(p)
}

// FlushError is a no-op: nothing leaves before finish.
func (j *JSONRewriter) FlushError() error { return nil }

// Finish passes the answer on, once.
func (j *JSONRewriter) Finish() {
	if j.finished || j.status == 0 {
		return
	}
	j.finished = true
	body := j.body.Bytes()
	if j.status/100 == 2 && strings.HasPrefix(j.header.Get("Content-Type"), "application/json") {
		body = j.fn(body)
	}
	for k, v := range j.header {
		j.w.Header()[k] = v
	}
	if j.w.Header().Get("Content-Length") != "" {
		j.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	j.body = bytes.Buffer{} // the body is the holder's now, or written
	if a, ok := j.w.(adopter); ok {
		a.Adopt(j.status, body)
		return
	}
	j.w.WriteHeader(j.status)
	_, _ = j.w.Write(body)
}

// execScrub scrubs one exec's answer: a JSON result (result) or an NDJSON
// stream (stream). A nil *execScrub scrubs nothing.
type Exec struct {
	Idle time.Duration
	// MaxLine bounds the line of a stream held while it is scrubbed (0:
	// no bound); a longer one cuts the stream (NDJSON).
	MaxLine  int
	json     *JSONRewriter
	stream   *NDJSON
	redacted bool // the JSON result had something replaced
}

// Result wraps hw, which holds the JSON result, so the result is scrubbed
// on its way in (at done).
func (x *Exec) Result(hw http.ResponseWriter) http.ResponseWriter {
	if x == nil {
		return hw
	}
	x.json = NewJSONRewriter(hw, func(b []byte) []byte {
		out, changed := redactFields(b, "stdout", "stderr")
		x.redacted = x.redacted || changed
		return out
	})
	return x.json
}

// Events wraps w, which the NDJSON stream goes to, so its output events
// are scrubbed.
func (x *Exec) Events(w http.ResponseWriter) http.ResponseWriter {
	if x == nil {
		return w
	}
	x.stream = NewNDJSON(w, x.Idle, x.MaxLine)
	return x.stream
}

// Done is called when the sidecar's answer is all in: the JSON result is
// scrubbed into its holder, what a stream held back is sent.
func (x *Exec) Done() {
	switch {
	case x == nil:
	case x.json != nil:
		x.json.Finish()
	case x.stream != nil:
		x.stream.FlushHeld()
	}
}

// Stop ends a stream's idle flushing; call it when the answer is over.
func (x *Exec) Stop() {
	if x != nil && x.stream != nil {
		x.stream.Stop()
	}
}

// OutputRedacted reports whether anything in the output was replaced.
func (x *Exec) OutputRedacted() bool {
	if x == nil {
		return false
	}
	return x.redacted || x.stream != nil && x.stream.redacted()
}

// CapturedResult is the exec result as the client gets it: c.captured,
// scrubbed when x scrubs.
func (x *Exec) CapturedResult(captured []byte) []byte {
	if x == nil || captured == nil {
		return captured
	}
	out, _ := redactFields(captured, "stdout", "stderr")
	return out
}

// scrubInterpreterResult scrubs an interpreter answer's printed output,
// result and traceback.
func InterpreterResult(b []byte) []byte {
	out, _ := redactFields(b, "stdout", "result", "error")
	return out
}

// scrubProcessOutput scrubs a process output page (GET …/output). While
// the process runs, the end of the chunk that could be the start of a
// secret is held back: next_offset then points at it, so the next page
// starts there and sees it whole.
func ProcessOutput(b []byte) []byte {
	var page api.ProcessOutput
	if json.Unmarshal(b, &page) != nil {
		return b
	}
	var sr tools.StreamRedactor
	chunk := sr.Write([]byte(page.StdoutChunk))
	next := page.NextOffset
	if page.Status == api.ProcessRunning {
		next -= int64(sr.Held())
	} else {
		chunk = append(chunk, sr.Flush()...)
	}
	out, err := rewriteObject(b, func(key string, _ json.RawMessage) json.RawMessage {
		switch key {
		case "stdout_chunk":
			v, _ := json.Marshal(string(chunk))
			return v
		case "next_offset":
			return json.RawMessage(strconv.FormatInt(next, 10))
		}
		return nil
	})
	if err != nil {
		return b
	}
	return out
}
