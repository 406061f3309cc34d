package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// The audit log fails closed (issue 19). Every audited operation first
// asks the gate (Log.Open): while the store cannot commit entries it is
// refused with 503 audit_unavailable and not performed. An operation that
// already ran when its entry failed (an exec that was answered as the
// store broke) gets an answer that says so instead of its result, its
// entry waits in memory, in order, and the gate closes. A loop in Run
// retries the waiting entries; once the store takes them all, the gate
// opens again by itself. /health/ready answers 503 with the reason while
// it is closed, which is what `boxkite status` and the TUI show.

// maxPendingAudit bounds the entries kept waiting for the store. Past it
// the newest are dropped, and counted: by then the server has refused
// audited work for a long time, so only operations already in flight
// when the store broke can add to it.
const maxPendingAudit = 10000

// auditRetryInterval is how often waiting entries are offered to the store.
const auditRetryInterval = 500 * time.Millisecond

// auditGate holds the entries the store could not commit and why.
type auditGate struct {
	mu      sync.Mutex
	cause   error     // the store's last error; nil while the gate is open
	since   time.Time // when it closed
	pending []*model.ExecLogEntry
	dropped int
	wake    chan struct{} // nudges the retry loop; buffered, one slot
}

func newAuditGate() *auditGate { return &auditGate{wake: make(chan struct{}, 1)} }

// state returns since when the gate is closed and why; a nil cause means
// it is open.
func (g *auditGate) state() (since time.Time, cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.since, g.cause
}

// enqueue keeps e behind the waiting entries if the gate is closed and
// reports whether it did; an open gate leaves e to the caller.
func (g *auditGate) enqueue(e *model.ExecLogEntry) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause == nil {
		return false
	}
	g.add(e)
	return true
}

// fail closes the gate with the store's error and keeps e waiting.
func (g *auditGate) fail(err error, e *model.ExecLogEntry, now time.Time) {
	g.mu.Lock()
	if g.cause == nil {
		g.since = now
	}
	g.cause = err
	g.add(e)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *auditGate) add(e *model.ExecLogEntry) {
	if len(g.pending) >= maxPendingAudit {
		g.dropped++
		return
	}
	g.pending = append(g.pending, e)
}

// next returns the oldest waiting entry, or nil.
func (g *auditGate) next() *model.ExecLogEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		return nil
	}
	return g.pending[0]
}

// committed drops the oldest waiting entry, which the store took, and
// opens the gate when none is left; it returns whether it opened, how
// long it was closed and how many entries were dropped meanwhile.
func (g *auditGate) committed(now time.Time) (opened bool, closedFor time.Duration, dropped int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending[0] = nil
	g.pending = g.pending[1:]
	if len(g.pending) > 0 {
		return false, 0, 0
	}
	closedFor, dropped = now.Sub(g.since), g.dropped
	g.cause, g.pending, g.dropped = nil, nil, 0
	return true, closedFor, dropped
}

// stillFailing records the store's latest error while entries wait.
func (g *auditGate) stillFailing(err error) {
	g.mu.Lock()
	g.cause = err
	g.mu.Unlock()
}

// auditReason is the part of a store error fit for anyone to read: which
// kind of fault, never the database's own message.
func Reason(err error) string {
	for _, known := range []error{model.ErrStoreReadOnly, model.ErrStoreFull, model.ErrStoreIO} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the database did not answer in time"
	}
	return "the database refused the write"
}

// auditUnavailableHint is the advice that goes with every refusal.
const auditUnavailableHint = "the operator must make the database writable again (the server log has the cause); " +
	"the server retries by itself and accepts audited operations once it can commit their entries"

// auditClosed is the 503 for audited work refused while the gate is closed.
func Closed(cause error, since time.Time) *api.Error {
	reason := Reason(cause)
	return &api.Error{
		Status: http.StatusServiceUnavailable, Code: api.CodeAuditUnavailable,
		Message: fmt.Sprintf("the audit log cannot be written (%s): audited operations are refused until it can", reason),
		Hint:    auditUnavailableHint,
		Details: map[string]any{"reason": reason, "since": since.UTC(), "performed": false},
	}
}

// auditNotRecorded is the answer to an operation that was performed but
// whose entry could not be committed: it waits in memory and is committed
// once the store takes writes again (withOutcome adds what the operation
// returned).
func NotRecorded(op string, cause error) *api.Error {
	reason := Reason(cause)
	details := map[string]any{"reason": reason, "performed": true, "operation": op, "entry_pending": true}
	return &api.Error{
		Status: http.StatusServiceUnavailable, Code: api.CodeAuditUnavailable,
		Message: fmt.Sprintf("the %s was performed but its audit entry could not be committed (%s); "+
			"audited operations are refused until it is", op, reason),
		Hint:    auditUnavailableHint,
		Details: details,
	}
}

// State returns since when the audit log refuses audited work and why;
// a nil cause means it accepts it.
func (l *Log) State() (since time.Time, cause error) { return l.gate.state() }

// Open is auditOpen.
func (l *Log) Open() error {
	if since, cause := l.gate.state(); cause != nil {
		return Closed(cause, since)
	}
	return nil
}

// Retry offers the waiting entries to the store, oldest first, until
// ctx is done: every auditRetryInterval while any wait, and as soon as
// one is added.
func (l *Log) Retry(ctx context.Context) {
	tick := time.NewTicker(auditRetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-l.gate.wake:
			// Just failed: give the store a moment before asking again.
			select {
			case <-ctx.Done():
				return
			case <-time.After(auditRetryInterval):
			}
		}
		l.commitPending(ctx)
	}
}

// commitPending appends waiting entries until the store fails or none is
// left.
func (l *Log) commitPending(ctx context.Context) {
	for e := l.gate.next(); e != nil; e = l.gate.next() {
		actx, cancel := context.WithTimeout(ctx, Timeout)
		err := l.store.AppendExecLog(actx, e)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				l.gate.stillFailing(err)
				l.log.DebugContext(ctx, "audit store still refuses entries", "waiting_entry", e.ID, "err", err)
			}
			return
		}
		l.appends.Inc()
		l.Broker.publish(e)
		if l.Committed != nil {
			l.Committed(ctx, e)
		}
		if opened, closedFor, dropped := l.gate.committed(l.now()); opened {
			if dropped > 0 {
				l.log.ErrorContext(ctx, "audit entries lost while the store refused writes", "dropped", dropped)
			}
			l.log.InfoContext(ctx, "audit store writable again: accepting audited operations",
				"closed_for", closedFor.Round(time.Millisecond))
		}
	}
}

// WithOutcome adds what the client would have had (an exec's exit code
// and result) to the details of an auditNotRecorded answer; other errors
// pass through.
func WithOutcome(err error, outcome map[string]any) error {
	ae, ok := errors.AsType[*api.Error](err)
	if !ok {
		return err
	}
	d, ok := ae.Details.(map[string]any)
	if !ok {
		return err
	}
	c := *ae
	c.Details = maps.Clone(d)
	maps.Copy(c.Details.(map[string]any), outcome)
	return &c
}
