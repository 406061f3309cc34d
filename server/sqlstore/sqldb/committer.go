package sqldb

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Appends are group-committed (issue 27: server/sqlstore's audit log).
// Every audited operation holds the end of its answer until its entry is
// committed, and execs answered together used to queue for the
// database's write lock one transaction each (SQLite's busy handler
// sleeps between tries, so a queue of sixteen cost tens of milliseconds
// each). Now one committer goroutine takes every append waiting when it
// is free, in arrival order, and commits them in one transaction: each
// caller still returns only once its own entry is committed (or has
// failed), so durability is unchanged, and the order of the entries is
// the order appends reached the committer, as it was the order they took
// the lock before.

// maxBatch bounds the entries one group commit writes, so that one
// transaction stays short while appends keep arriving.
const maxBatch = 128

// batchTimeout bounds a group commit's transaction. It does not use a
// caller's context: once an entry is in a batch its caller waits for the
// batch, so that an error always means the entry was not committed (a
// caller that gave up while its entry went on to commit would have it
// retried, and logged twice).
const batchTimeout = 10 * time.Second

// appendReq is one Append waiting for the committer.
type appendReq[T any] struct {
	ctx  context.Context
	e    T
	done chan error // buffered, one slot
}

// Committer is a group committer of entries of type T.
type Committer[T any] struct {
	reqs chan *appendReq[T]
	stop chan struct{}
	done chan struct{}
	once sync.Once // closes stop
	// batches and appended count group commits and the entries they
	// wrote, for tests (Stats).
	batches, appended atomic.Int64
	commit            func(ctx context.Context, batch []T) error
	single            func(ctx context.Context, e T) error
	storeWide         func(error) bool
}

// NewCommitter starts a committer that writes each batch with commit, in
// one transaction. A batch that fails as a whole for a reason that is not
// the store's (storeWide false: one entry's conflict, say) is written
// again entry by entry with single, so that one entry's error is never
// another's. Close stops it.
func NewCommitter[T any](commit func(context.Context, []T) error, single func(context.Context, T) error, storeWide func(error) bool) *Committer[T] {
	c := &Committer[T]{
		reqs: make(chan *appendReq[T], maxBatch), stop: make(chan struct{}), done: make(chan struct{}),
		commit: commit, single: single, storeWide: storeWide,
	}
	go c.run()
	return c
}

// ErrClosed answers appends that reach a closed committer.
var ErrClosed = errors.New("the store is closed")

// Append hands e to the committer and waits for its batch's outcome.
func (c *Committer[T]) Append(ctx context.Context, e T) error {
	r := &appendReq[T]{ctx: ctx, e: e, done: make(chan error, 1)}
	select {
	case c.reqs <- r:
	case <-c.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-c.done:
		// The committer answers every request it took before it stops; one
		// that reached the queue after it stopped is not written.
		select {
		case err := <-r.done:
			return err
		default:
			return ErrClosed
		}
	}
}

// Close stops the committer once it has answered every request it took.
// Closing again is a no-op.
func (c *Committer[T]) Close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// Stats returns how many group commits the committer ran and how many
// entries they committed (tests check that appends arriving together
// share a transaction).
func (c *Committer[T]) Stats() (batches, entries int64) {
	return c.batches.Load(), c.appended.Load()
}

func (c *Committer[T]) run() {
	defer close(c.done)
	batch := make([]*appendReq[T], 0, maxBatch)
	for {
		select {
		case r := <-c.reqs:
			batch = append(batch[:0], r)
		case <-c.stop:
			// Answer what was queued before the store closed.
			for {
				select {
				case r := <-c.reqs:
					r.done <- ErrClosed
				default:
					return
				}
			}
		}
		// Everything that arrived while the last batch committed.
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-c.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		c.write(batch)
		clear(batch)
	}
}

// write commits batch in one transaction and answers each request. A
// batch that fails as a whole for a reason that is not the store's (one
// entry's conflict, say) is written again entry by entry, so that one
// entry's error is never another's.
func (c *Committer[T]) write(batch []*appendReq[T]) {
	live := batch[:0:len(batch)]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err // gave up before its entry was written
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	entries := make([]T, len(live))
	for i, r := range live {
		entries[i] = r.e
	}
	err := c.commit(ctx, entries)
	c.batches.Add(1)
	if err == nil {
		c.appended.Add(int64(len(entries)))
	}
	if err == nil || len(live) == 1 || c.storeWide(err) {
		for _, r := range live {
			r.done <- err
		}
		return
	}
	for _, r := range live {
		r.done <- c.single(ctx, r.e)
	}
}
