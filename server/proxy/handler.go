package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/iocount"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/model"
)

// idPattern is what a process or LSP id in a path may look like. Checking
// it keeps "..", "/" and query characters out of the sidecar path built
// from it.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// wildcardPattern finds {name} in a sidecar path template.
var wildcardPattern = regexp.MustCompile(`\{([a-z_]+)\}`)

// exchange is what an audit detail function may look at: the request and
// its JSON body, and the sidecar's answer.
type exchange struct {
	r        *http.Request
	reqBody  []byte // bodyJSON routes
	upBytes  int64  // bodyStream routes: bytes uploaded
	call     *sidecar.Call
	exitCode *int // set by detail functions that know one
	// outputTruncated is set by detail functions whose answer says output was cut.
	outputTruncated bool
}

// req decodes the request body into v; fields it cannot decode stay zero
// (the sidecar accepted the request, so this does not happen in practice).
func (x *exchange) req(v any) { _ = json.Unmarshal(x.reqBody, v) }

// resp decodes the captured JSON answer into v and reports whether it could.
func (x *exchange) resp(v any) bool {
	return x.call.Captured != nil && json.Unmarshal(x.call.Captured, v) == nil
}

// handler serves one proxyRoute.
func (s *Service) handler(rt proxyRoute) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		sb, err := s.d.LoadActive(r)
		if err != nil {
			return err
		}
		path, err := expandSidecarPath(rt.sidecar, r)
		if err != nil {
			return err
		}
		x := &exchange{r: r}
		c, up, err := s.newCall(rt, w, r, path, x)
		if err != nil {
			return err
		}
		c.HostFlush = rt.flags&hostFlush != 0 && s.d.FlushesFiles(sb)
		started := s.d.Now()
		// Command output is scrubbed on its way out (scrubber); finish
		// sends what the scrubber still holds.
		out, finish := s.scrubber(rt, r, w)
		if rt.op == "" {
			release, err := s.reserveHeld(rt, sb)
			if err != nil {
				return err
			}
			defer release()
			err = s.Forward(out, r, sb, c)
			finish()
			if errors.Is(err, sidecar.ErrStreamBroken) {
				if endRevokedStream(w, r) {
					return nil
				}
				s.AbortResponse(r, err)
			}
			return err
		}
		if err := s.d.Audit.Open(); err != nil {
			return err
		}
		if rt.flags&upload != 0 {
			if err := s.d.AdmitWrite(r.Context(), sb.ID, r.ContentLength); err != nil {
				return err
			}
		}
		if up != nil && c.Length < 0 {
			if err := s.readSmallUpload(r, c, up); err != nil {
				return err
			}
		}
		release, err := s.reserveHeld(rt, sb)
		if err != nil {
			return err
		}
		defer release()
		// Audited: the end of the answer waits for the entry (server/internal/hold).
		// Reads too (a download, a view, a grep), though they change
		// nothing: docs/audit.md gives every operation on a sandbox that
		// succeeded an entry and fails closed (an operation whose entry
		// could not be committed is answered 503 audit_unavailable), and a
		// read is what the log shows left the sandbox. Answered before its
		// commit, a read's entry would be lost by a crash after the caller
		// had the bytes. The group commit shares the fsync among the
		// entries answered together (issue 27).
		hw := hold.NewTail(out)
		err = s.Forward(hw, r, sb, c)
		if errors.Is(err, sidecar.ErrStreamBroken) {
			s.AbortResponse(r, err)
		}
		if err == nil && c.Status >= 500 && rt.flags&writes != 0 {
			// The sidecar could not write: if that is because the host
			// could not store it, say so rather than pass on a 500.
			if serr := s.d.BrokenDisk(r.Context(), sb, rt.op); serr != nil {
				return hw.Fail(serr)
			}
		}
		if err != nil || c.Status/100 != 2 {
			hw.Release()
			finish()
			return err
		}
		x.call = c
		if up != nil {
			x.upBytes = up.N
		}
		err = s.record(r, rt, sb, x, started)
		if err != nil {
			return hw.Fail(audit.WithOutcome(err, map[string]any{"status": c.Status}))
		}
		hw.Release()
		finish()
		return nil
	}
}

// newCall builds the sidecar call of a request to rt: the query passed on
// (without api_key) and the body, a JSON one read whole (and its command
// checked against the allowlist) or an upload streamed through up.
func (s *Service) newCall(rt proxyRoute, w http.ResponseWriter, r *http.Request, path string, x *exchange) (*sidecar.Call, *iocount.Reader, error) {
	query := r.URL.Query()
	query.Del("api_key")
	if rt.flags&needPath != 0 && query.Get("path") == "" {
		return nil, nil, apihttp.PathRequired()
	}
	c := &sidecar.Call{Method: rt.method, Path: path, Query: query, Length: -1, Timeout: rt.timeout}
	var up *iocount.Reader
	switch rt.body {
	case bodyJSON:
		var err error
		if x.reqBody, err = apihttp.ReadJSON(w, r, httpx.MaxExecBody); err != nil {
			return nil, nil, err
		}
		if rt.flags&(checkCommand|checkCode|checkNodeCode) != 0 {
			program := "python3"
			if rt.flags&checkNodeCode != 0 {
				program = "node"
			}
			if err := s.d.CheckBodyCommand(r, x.reqBody, rt.flags&(checkCode|checkNodeCode) != 0, program); err != nil {
				return nil, nil, err
			}
		}
		c.Body, c.Length = bytes.NewReader(x.reqBody), int64(len(x.reqBody))
	case bodyStream:
		apihttp.Streaming(r) // an upload of any size: only stalls time out
		up = &iocount.Reader{R: r.Body}
		c.Body, c.Length = up, r.ContentLength
	}
	return c, up, nil
}

// record flushes what a writing operation changed to the host's storage
// and appends its audit entry. A file write the sidecar left to the host
// to flush (hostFlush) is flushed beside the entry's commit, and a flush
// that failed is a system entry (audit.NotStored) after it, as for an
// exec; another write is flushed first, and a flush that failed is
// reported after the entry, which then says the change was not stored.
func (s *Service) record(r *http.Request, rt proxyRoute, sb *model.Sandbox, x *exchange, started time.Time) error {
	op := strings.ReplaceAll(rt.op, "_", " ")
	if x.call.HostFlush {
		id := model.NewID()
		return s.d.Audit.AppendStored(r.Context(), sb, rt.op, id, func() error {
			return s.appendEntry(r, rt, sb, x, started, id, nil)
		}, audit.Flush{Run: func() error { return s.d.SyncDisk(r.Context(), sb, op) }})
	}
	var syncErr error
	if rt.flags&writes != 0 && rt.flags&flushed == 0 {
		syncErr = s.d.SyncDisk(r.Context(), sb, op)
	}
	err := s.appendEntry(r, rt, sb, x, started, "", syncErr)
	if err == nil {
		err = syncErr
	}
	return err
}

// appendEntry appends the audit entry of an operation (with id, "" for a
// new one), which says the change was not stored when syncErr is set.
func (s *Service) appendEntry(r *http.Request, rt proxyRoute, sb *model.Sandbox, x *exchange, started time.Time, id string, syncErr error) error {
	var detail map[string]any
	if rt.detail != nil {
		detail = rt.detail(x)
	}
	if syncErr != nil {
		if detail == nil {
			detail = map[string]any{}
		}
		detail["stored"] = false // performed, but the host could not store it
	}
	return s.d.Audit.Append(r.Context(), audit.Record{
		ID: id, Sandbox: sb, Operation: rt.op, Detail: detail,
		ExitCode: x.exitCode, OutputTruncated: x.outputTruncated,
		Started: started, Duration: s.d.Now().Sub(started),
	})
}

// expandSidecarPath fills the {name} wildcards of a sidecar path template
// with the request's path values, which must look like ids.
func expandSidecarPath(tmpl string, r *http.Request) (string, error) {
	var bad error
	out := wildcardPattern.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		v := r.PathValue(name)
		if !idPattern.MatchString(v) && bad == nil {
			what := strings.TrimSuffix(strings.ReplaceAll(name, "_", " "), " id")
			if name == "pid" {
				what = "process"
			}
			bad = api.Errorf(http.StatusNotFound, api.CodeNotFound, "%s %q not found", what, v)
		}
		return v
	})
	return out, bad
}

// reserveHeld reserves, for a route whose JSON answer the control plane
// may hold whole (scrubbed, and captured for the audit detail), its bound
// of the held-output budget before the sidecar is asked; the handler
// gives it back when it ends. Other routes reserve nothing.
func (s *Service) reserveHeld(rt proxyRoute, sb *model.Sandbox) (func(), error) {
	switch {
	case rt.flags&scrubsInterpreter != 0:
		return s.d.ReserveHeld(sb.AccountID, hold.Interpreter, strings.ReplaceAll(rt.op, "_", " "), heldHint)
	case rt.flags&scrubsProcessOutput != 0:
		return s.d.ReserveHeld(sb.AccountID, hold.ProcessOutput, "process output read", heldHint)
	}
	return func() {}, nil
}

// heldHint is the way around a held-output refusal of an interpreter run
// or a process output page, which have no output limit to ask less of.
const heldHint = "retry when your account's other JSON execs, interpreter runs and process output reads have answered, " +
	"or stream instead: a streamed exec (`Accept: application/x-ndjson`) or a process's event stream (GET …/processes/{pid}/stream) holds one line or event at a time and is not limited"

// scrubber wraps w for a route whose answer carries command output, when
// r's account scrubs it. finish passes on what is held; call it once the
// answer is complete.
func (s *Service) scrubber(rt proxyRoute, r *http.Request, w http.ResponseWriter) (http.ResponseWriter, func()) {
	if rt.flags&(scrubsProcessStream|scrubsProcessOutput|scrubsInterpreter) == 0 || !s.d.ScrubsOutput(r) {
		return w, func() {}
	}
	switch {
	case rt.flags&scrubsProcessStream != 0:
		// Scrubbed event by event, an event cut at what a JSON answer
		// holds (hold.StreamLine).
		ss := scrub.NewSSE(w, s.d.ScrubIdle(), hold.StreamLine)
		return ss, func() { ss.FlushHeld(); ss.Stop() }
	case rt.flags&scrubsInterpreter != 0:
		// A JSON result held whole, or a stream (Accept:
		// application/x-ndjson) scrubbed line by line, a line cut at what
		// a JSON answer holds (hold.StreamLine).
		i := scrub.NewInterpreter(w, s.d.ScrubIdle(), hold.StreamLine)
		return i, i.Finish
	}
	j := scrub.NewJSONRewriter(w, scrub.ProcessOutput)
	return j, j.Finish
}

// endRevokedStream ends an event stream (a process's output) whose
// credential was revoked or expired under it with an error event, as a
// streamed exec's ends (docs/accounts.md), so the client is told why
// rather than handed a cut-off body. It reports whether it did: anything
// else broken off is aborted by the caller.
func endRevokedStream(w http.ResponseWriter, r *http.Request) bool {
	if !errors.Is(context.Cause(r.Context()), authz.ErrCredentialRevoked) ||
		!strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return false
	}
	data, err := json.Marshal(api.ProcessEvent{Type: api.ProcessEventError, Error: authz.StreamEnded(r.Context())})
	if err != nil {
		return false
	}
	_, _ = io.WriteString(w, "event: "+api.ProcessEventError+"\ndata: "+string(data)+"\n\n")
	_ = http.NewResponseController(w).Flush()
	return true
}
