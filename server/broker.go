package server

import (
	"context"
	"sync"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// The audit broker tells live watchers (GET …/watch) that a sandbox has new
// log entries. Entries appended by this process are handed over whole, so
// a watcher usually sends them without touching the store; entries
// appended by other servers on the same database arrive as bare notices
// through an AuditListener (Postgres LISTEN/NOTIFY), and the watcher reads
// them from the store. The store stays the source of truth: a watcher
// keeps a cursor (the last Seq it sent) and reads the store whenever what
// it was handed does not follow on from it, so nothing is skipped or sent
// twice however notices are delayed, duplicated or reordered.

// maxPending bounds the entries queued for one watcher that is slow to
// send them; past it the watcher reads the store instead.
const maxPending = 256

type broker struct {
	mu   sync.Mutex
	subs map[string]map[*subscription]struct{} // sandbox id → its watchers

	closing   chan struct{} // closed when the server shuts down: watchers end
	closeOnce sync.Once
}

func newBroker() *broker {
	return &broker{subs: map[string]map[*subscription]struct{}{}, closing: make(chan struct{})}
}

// shutdown ends every watch stream, now and later.
func (b *broker) shutdown() { b.closeOnce.Do(func() { close(b.closing) }) }

// subscription is one watcher's mailbox.
type subscription struct {
	b         *broker
	sandboxID string
	wake      chan struct{} // has a value when there is something to take

	mu      sync.Mutex
	pending []*model.ExecLogEntry
	reread  bool // something happened that pending does not hold: read the store
}

// subscribe starts collecting entries of the sandbox. Subscribe before
// reading the store, so that nothing appended in between is missed.
func (b *broker) subscribe(sandboxID string) *subscription {
	sub := &subscription{b: b, sandboxID: sandboxID, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.subs[sandboxID]
	if m == nil {
		m = map[*subscription]struct{}{}
		b.subs[sandboxID] = m
	}
	m[sub] = struct{}{}
	return sub
}

// close stops the subscription.
func (sub *subscription) close() {
	b := sub.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.subs[sub.sandboxID]; m != nil {
		delete(m, sub)
		if len(m) == 0 {
			delete(b.subs, sub.sandboxID)
		}
	}
}

// publish hands e, just committed by this process, to the sandbox's watchers.
func (b *broker) publish(e *model.ExecLogEntry) {
	b.each(e.SandboxID, func(sub *subscription) { sub.put(e) })
}

// notify tells the sandbox's watchers to look at the store (an entry was
// appended elsewhere).
func (b *broker) notify(sandboxID string) {
	b.each(sandboxID, func(sub *subscription) { sub.put(nil) })
}

// notifyAll tells every watcher to look at the store.
func (b *broker) notifyAll() {
	b.mu.Lock()
	var all []*subscription
	for _, m := range b.subs {
		for sub := range m {
			all = append(all, sub)
		}
	}
	b.mu.Unlock()
	for _, sub := range all {
		sub.put(nil)
	}
}

func (b *broker) each(sandboxID string, fn func(*subscription)) {
	b.mu.Lock()
	subs := make([]*subscription, 0, len(b.subs[sandboxID]))
	for sub := range b.subs[sandboxID] {
		subs = append(subs, sub)
	}
	b.mu.Unlock()
	for _, sub := range subs {
		fn(sub)
	}
}

// put queues e (nil: read the store) and wakes the watcher.
func (sub *subscription) put(e *model.ExecLogEntry) {
	sub.mu.Lock()
	switch {
	case e == nil || len(sub.pending) >= maxPending:
		sub.reread, sub.pending = true, nil
	case !sub.reread:
		sub.pending = append(sub.pending, e)
	}
	sub.mu.Unlock()
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// take returns what was queued since the last take.
func (sub *subscription) take() (entries []*model.ExecLogEntry, reread bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	entries, reread = sub.pending, sub.reread
	sub.pending, sub.reread = nil, false
	return entries, reread
}

// listenAudit runs the store's AuditListener, if it has one, until ctx is
// done, reconnecting after failures.
func (s *Server) listenAudit(ctx context.Context) {
	l, ok := s.store.(model.AuditListener)
	if !ok {
		return
	}
	s.keepListening(ctx, "audit entries", func() error {
		return l.ListenAudit(ctx,
			func(sandboxID, _ string) { s.alog.broker.notify(sandboxID) },
			s.alog.broker.notifyAll)
	})
}

// keepListening runs listen (a store's LISTEN for what other servers do)
// until ctx is done or it returns nil, again after each failure, backing
// off up to 10 s.
func (s *Server) keepListening(ctx context.Context, what string, listen func() error) {
	backoff := 100 * time.Millisecond
	for {
		start := time.Now()
		err := listen()
		if ctx.Err() != nil || err == nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		s.log.WarnContext(ctx, "listen for "+what+" of other servers", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
