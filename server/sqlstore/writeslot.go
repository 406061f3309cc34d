package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// SQLite takes one writer at a time, and every write of the store is a
// BEGIN IMMEDIATE (or a lone statement) on a connection of its own.
// Writers that found the lock taken used to wait in SQLite's busy
// handler, which sleeps and tries again, in no order: under a burst (100
// creates at once on a loaded host, issue 27) one writer could lose every
// try for busy_timeout's 10 s and fail with SQLITE_BUSY, a 500. So the
// store queues its SQLite writers itself, in arrival order, before they
// take a connection (a waiter holds none): a writer waits its turn for as
// long as its context allows, and finds SQLite's lock free when it
// begins (busy_timeout stays, for another process on the file).
//
// A write must never start inside another's transaction (a method called
// from a transaction's callback): it would wait for the slot its own
// caller holds until its context ends. TestNoWriteInsideATransaction
// checks this package's code for it.

// writeSlot is a lock with a FIFO queue whose waiters give up when their
// context ends. The slot is handed from holder to the queue's head, so a
// newcomer never overtakes a waiter.
type writeSlot struct {
	mu    sync.Mutex
	held  bool
	queue []chan struct{} // closed when the slot is handed to its waiter
}

// acquire takes the slot, waiting behind those who asked before for as
// long as ctx allows. Its error wraps ctx's.
func (w *writeSlot) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wait for the database's write slot: %w", err)
	}
	w.mu.Lock()
	if !w.held {
		w.held = true
		w.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	w.queue = append(w.queue, ready)
	w.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	i := slices.Index(w.queue, ready)
	if i >= 0 {
		w.queue = slices.Delete(w.queue, i, i+1)
	}
	w.mu.Unlock()
	if i < 0 { // handed the slot as ctx ended: pass it on
		w.release()
	}
	return fmt.Errorf("wait for the database's write slot: %w", ctx.Err())
}

// release hands the slot to the first waiter, or frees it.
func (w *writeSlot) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.held = false
		return
	}
	next := w.queue[0]
	w.queue = slices.Delete(w.queue, 0, 1)
	close(next)
}

// waiting returns how many writers wait for the slot (tests).
func (w *writeSlot) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}
