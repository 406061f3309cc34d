package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/tools"
)

// VerifyExecLog checks a sandbox's whole chain against the head the store
// recorded: entries must be all of its entries in Seq order, starting at
// the first and reaching head. The error names the first entry that does
// not verify and wraps api.ErrChainBroken (and api.ErrLogGap for a
// missing entry).
//
// An edited, inserted, reordered or removed row breaks the chain; so does
// removing the newest rows, which leaves a chain shorter than its head.
func VerifyExecLog(entries []*model.ExecLogEntry, head model.ExecLogHead) error {
	out := make([]api.LogEntry, len(entries))
	for i, e := range entries {
		out[i] = e.ToAPI()
	}
	return api.VerifyLog(out, head.Seq, head.RowHash)
}

// maxLoggedText bounds commands and code kept in an entry's detail; the
// whole length is recorded next to it, so a cut is visible.
const maxLoggedText = 2 << 10

// auditTimeout bounds writing one entry. It runs after the client has its
// answer, on a context that outlives the request.
const auditTimeout = 10 * time.Second

// auditRecord is what a handler knows about an operation that succeeded.
type auditRecord struct {
	sb              *model.Sandbox
	source          string
	operation       string
	detail          map[string]any
	exitCode        *int
	outputTruncated bool
	started         time.Time
	duration        time.Duration
}

// audit appends an entry for rec and hands it to live watchers. Callers
// hold back the end of their answer until it returns (exec_hold.go), so a
// client that saw an operation's result can rely on its entry, even if the
// server is killed right after. When the entry cannot be committed the
// audit log fails closed (auditgate.go): the entry waits to be committed
// later, the gate closes, and the *api.Error returned is what the caller
// answers instead of the operation's result.
func (s *Server) audit(ctx context.Context, rec auditRecord) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	e, err := s.newEntry(rec)
	if err != nil {
		s.log.ErrorContext(ctx, "build audit log entry", "sandbox", rec.sb.ID, "operation", rec.operation, "err", err)
		return err
	}
	if s.auditGate.enqueue(e) {
		// Entries commit in order: this one waits behind those before it.
		_, cause := s.auditGate.state()
		return auditNotRecorded(rec.operation, cause)
	}
	if err := s.store.AppendExecLog(ctx, e); err != nil {
		s.metrics.auditFailures.Add(1)
		s.auditGate.fail(err, e, s.now())
		s.log.ErrorContext(ctx, "write audit log entry: refusing audited operations until the store takes it",
			"sandbox", rec.sb.ID, "operation", rec.operation, "entry", e.ID, "err", err)
		return auditNotRecorded(rec.operation, err)
	}
	s.metrics.auditAppends.Add(1)
	s.broker.publish(e)
	return nil
}

// newEntry is the unsealed entry of rec.
func (s *Server) newEntry(rec auditRecord) (*model.ExecLogEntry, error) {
	if rec.detail == nil {
		rec.detail = map[string]any{}
	}
	scrub.Detail(rec.detail) // no secret typed into a command is kept (scrub.go)
	raw, err := json.Marshal(rec.detail)
	if err != nil {
		return nil, fmt.Errorf("encode detail: %w", err)
	}
	detail, err := api.CanonicalJSON(raw)
	if err != nil {
		return nil, err
	}
	source := rec.source
	if source == "" {
		source = api.LogSourceAgent
	}
	return &model.ExecLogEntry{
		ID:              model.NewID(),
		SandboxID:       rec.sb.ID,
		AccountID:       rec.sb.AccountID,
		Source:          source,
		Operation:       rec.operation,
		Detail:          detail,
		ExitCode:        rec.exitCode,
		OutputTruncated: rec.outputTruncated,
		StartedAt:       rec.started.UTC().Truncate(time.Microsecond),
		DurationMS:      rec.duration.Milliseconds(),
	}, nil
}

// loggedText returns text as an entry's detail keeps it: at most
// maxLoggedText bytes, cut on a UTF-8 boundary.
func loggedText(text string) string {
	// Scrubbed before the cut, so no secret is cut in two halves that no
	// longer look like one (scrubDetail scrubs the rest of the detail).
	text = tools.Redact(text)
	if len(text) <= maxLoggedText {
		return text
	}
	cut := text[:maxLoggedText]
	// Drop a multi-byte sequence the cut split (at most UTFMax-1 bytes).
	for range utf8.UTFMax - 1 {
		if r, size := utf8.DecodeLastRuneInString(cut); r != utf8.RuneError || size != 1 {
			break
		}
		cut = cut[:len(cut)-1]
	}
	return strings.ToValidUTF8(cut, "")
}

// getLog serves GET /v1/sandboxes/{id}/log?limit=&offset=: the sandbox's
// audit entries in chain order (oldest first), destroyed sandboxes included.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", api.DefaultLogLimit, 1, api.MaxLogLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	return s.writeLogPage(w, r, sb.ID, limit, offset)
}

// writeLogPage answers with a page of the audit chain of id: a sandbox's,
// or an image build's.
func (s *Server) writeLogPage(w http.ResponseWriter, r *http.Request, id string, limit, offset int) error {
	// The head first: entries appended meanwhile follow it, never precede it.
	head, err := s.store.ExecLogHead(r.Context(), id)
	if err != nil {
		return fmt.Errorf("read exec log head: %w", err)
	}
	entries, total, err := s.store.ExecLog(r.Context(), id, limit, offset)
	if err != nil {
		return fmt.Errorf("read exec log: %w", err)
	}
	page := api.LogPage{
		Entries: make([]api.LogEntry, len(entries)), Limit: limit, Offset: offset, Total: total,
		HeadSeq: head.Seq, HeadHash: head.RowHash,
	}
	for i, e := range entries {
		page.Entries[i] = e.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, page)
	return nil
}

// queryInt reads an integer query parameter within [lo, hi]; absent means def.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		msg := fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi)
		return 0, &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: msg,
			Details: []httpx.FieldError{{Loc: []string{"query", name}, Msg: msg, Type: "value_error"}},
		}
	}
	return n, nil
}
