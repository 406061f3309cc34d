package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/tools"
)

// maxLoggedText bounds commands and code kept in an entry's detail; the
// whole length is recorded next to it, so a cut is visible.
const maxLoggedText = 2 << 10

// Timeout bounds writing one entry. It runs after the client has its
// answer, on a context that outlives the request.
const Timeout = 10 * time.Second

// auditRecord is what a handler knows about an operation that succeeded.
type Record struct {
	// ID is the entry's id when the caller names it elsewhere, else empty
	// for a new one.
	ID              string
	Sandbox         *model.Sandbox
	Source          string
	Operation       string
	Detail          map[string]any
	ExitCode        *int
	OutputTruncated bool
	Started         time.Time
	Duration        time.Duration
}

// auditLog writes the audit log: a hash chain of entries per sandbox (or
// image build), appended through the store, failing closed while the
// store cannot commit them (auditgate.go), and handed to live watchers
// (broker.go).
type Log struct {
	store             model.AuditStore
	log               *slog.Logger
	now               func() time.Time
	appends, failures interface{ Inc() } // metrics
	gate              *auditGate
	Broker            *Broker
	// Committed, when set (before the log is used), is told of each entry
	// once it is committed: the server queues its webhook events.
	Committed func(ctx context.Context, e *model.ExecLogEntry)
}

func New(store model.AuditStore, log *slog.Logger, now func() time.Time, appends, failures interface{ Inc() }) *Log {
	return &Log{
		store: store, log: log, now: now, appends: appends, failures: failures,
		gate: newAuditGate(), Broker: newBroker(),
	}
}

// Append appends an entry for rec and hands it to live watchers. Callers
// hold back the end of their answer until it returns (exec_hold.go), so a
// client that saw an operation's result can rely on its entry, even if the
// server is killed right after. When the entry cannot be committed the
// audit log fails closed (auditgate.go): the entry waits to be committed
// later, the gate closes, and the *api.Error returned is what the caller
// answers instead of the operation's result.
func (l *Log) Append(ctx context.Context, rec Record) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	defer cancel()
	e, err := newEntry(rec)
	if err != nil {
		l.log.ErrorContext(ctx, "build audit log entry", "sandbox", rec.Sandbox.ID, "operation", rec.Operation, "err", err)
		return err
	}
	if l.gate.enqueue(e) {
		// Entries commit in order: this one waits behind those before it.
		_, cause := l.gate.state()
		return NotRecorded(rec.Operation, cause)
	}
	if err := l.store.AppendExecLog(ctx, e); err != nil {
		l.failures.Inc()
		l.gate.fail(err, e, l.now())
		l.log.ErrorContext(ctx, "write audit log entry: refusing audited operations until the store takes it",
			"sandbox", rec.Sandbox.ID, "operation", rec.Operation, "entry", e.ID, "err", err)
		return NotRecorded(rec.Operation, err)
	}
	l.appends.Inc()
	l.Broker.publish(e)
	if l.Committed != nil {
		l.Committed(ctx, e)
	}
	return nil
}

// newEntry is the unsealed entry of rec.
func newEntry(rec Record) (*model.ExecLogEntry, error) {
	if rec.Detail == nil {
		rec.Detail = map[string]any{}
	}
	scrub.Detail(rec.Detail) // no secret typed into a command is kept (scrub.go)
	raw, err := json.Marshal(rec.Detail)
	if err != nil {
		return nil, fmt.Errorf("encode detail: %w", err)
	}
	detail, err := api.CanonicalJSON(raw)
	if err != nil {
		return nil, err
	}
	id := rec.ID
	if id == "" {
		id = model.NewID()
	}
	source := rec.Source
	if source == "" {
		source = api.LogSourceAgent
	}
	return &model.ExecLogEntry{
		ID:              id,
		SandboxID:       rec.Sandbox.ID,
		AccountID:       rec.Sandbox.AccountID,
		Source:          source,
		Operation:       rec.Operation,
		Detail:          detail,
		ExitCode:        rec.ExitCode,
		OutputTruncated: rec.OutputTruncated,
		StartedAt:       rec.Started.UTC().Truncate(time.Microsecond),
		DurationMS:      rec.Duration.Milliseconds(),
	}, nil
}

// LoggedText returns text as an entry's detail keeps it: at most
// maxLoggedText bytes, cut on a UTF-8 boundary.
func LoggedText(text string) string {
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
