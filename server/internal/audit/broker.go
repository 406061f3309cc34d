package audit

import (
	"sync"

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

type Broker struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{} // sandbox id → its watchers

	Closing   chan struct{} // closed when the server shuts down: watchers end
	closeOnce sync.Once
}

func newBroker() *Broker {
	return &Broker{subs: map[string]map[*Subscription]struct{}{}, Closing: make(chan struct{})}
}

// Shutdown ends every watch stream, now and later.
func (b *Broker) Shutdown() { b.closeOnce.Do(func() { close(b.Closing) }) }

// Subscription is one watcher's mailbox.
type Subscription struct {
	b         *Broker
	sandboxID string
	Wake      chan struct{} // has a value when there is something to take

	mu      sync.Mutex
	pending []*model.ExecLogEntry
	reread  bool // something happened that pending does not hold: read the store
}

// Subscribe starts collecting entries of the sandbox. Subscribe before
// reading the store, so that nothing appended in between is missed.
func (b *Broker) Subscribe(sandboxID string) *Subscription {
	sub := &Subscription{b: b, sandboxID: sandboxID, Wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.subs[sandboxID]
	if m == nil {
		m = map[*Subscription]struct{}{}
		b.subs[sandboxID] = m
	}
	m[sub] = struct{}{}
	return sub
}

// Close stops the subscription.
func (sub *Subscription) Close() {
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
func (b *Broker) publish(e *model.ExecLogEntry) {
	b.each(e.SandboxID, func(sub *Subscription) { sub.put(e) })
}

// Notify tells the sandbox's watchers to look at the store (an entry was
// appended elsewhere).
func (b *Broker) Notify(sandboxID string) {
	b.each(sandboxID, func(sub *Subscription) { sub.put(nil) })
}

// NotifyAll tells every watcher to look at the store.
func (b *Broker) NotifyAll() {
	b.mu.Lock()
	var all []*Subscription
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

func (b *Broker) each(sandboxID string, fn func(*Subscription)) {
	b.mu.Lock()
	subs := make([]*Subscription, 0, len(b.subs[sandboxID]))
	for sub := range b.subs[sandboxID] {
		subs = append(subs, sub)
	}
	b.mu.Unlock()
	for _, sub := range subs {
		fn(sub)
	}
}

// put queues e (nil: read the store) and wakes the watcher.
func (sub *Subscription) put(e *model.ExecLogEntry) {
	sub.mu.Lock()
	switch {
	case e == nil || len(sub.pending) >= maxPending:
		sub.reread, sub.pending = true, nil
	case !sub.reread:
		sub.pending = append(sub.pending, e)
	}
	sub.mu.Unlock()
	select {
	case sub.Wake <- struct{}{}:
	default:
	}
}

// Take returns what was queued since the last take.
func (sub *Subscription) Take() (entries []*model.ExecLogEntry, reread bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	entries, reread = sub.pending, sub.reread
	sub.pending, sub.reread = nil, false
	return entries, reread
}
