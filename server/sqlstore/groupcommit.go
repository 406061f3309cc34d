package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Audit appends are group-committed (issue 27). Every audited operation
// holds the end of its answer until its entry is committed, and execs
// answered together used to queue for the database's write lock one
// transaction each (SQLite's busy handler sleeps between tries, so a
// queue of sixteen cost tens of milliseconds each). Now one committer
// goroutine takes every append waiting when it is free, in arrival order,
// and commits them in one transaction: each caller still returns only
// once its own entry is committed (or has failed), so durability is
// unchanged, and the chain order is the order appends reached the
// committer, as it was the order they took the lock before.

// maxAuditBatch bounds the entries one group commit writes, so that one
// transaction stays short while appends keep arriving.
const maxAuditBatch = 128

// auditBatchTimeout bounds a group commit's transaction. It does not use
// a caller's context: once an entry is in a batch its caller waits for the
// batch, so that an error always means the entry was not committed (a
// caller that gave up while its entry went on to commit would have it
// retried, and logged twice).
const auditBatchTimeout = 10 * time.Second

// appendReq is one AppendExecLog waiting for the committer.
type appendReq struct {
	ctx  context.Context
	e    *model.ExecLogEntry
	done chan error // buffered, one slot
}

// committer is the audit log's group committer.
type committer struct {
	reqs chan *appendReq
	stop chan struct{}
	done chan struct{}
	once sync.Once // closes stop
	// batches and appended count group commits and the entries they
	// wrote, for tests (GroupCommitStats).
	batches, appended atomic.Int64
	commit            func(ctx context.Context, batch []*model.ExecLogEntry) error
	single            func(ctx context.Context, e *model.ExecLogEntry) error
}

func newCommitter(commit func(context.Context, []*model.ExecLogEntry) error,
	single func(context.Context, *model.ExecLogEntry) error,
) *committer {
	c := &committer{
		reqs: make(chan *appendReq, maxAuditBatch), stop: make(chan struct{}), done: make(chan struct{}),
		commit: commit, single: single,
	}
	go c.run()
	return c
}

// errStoreClosed answers appends that reach a closed store.
var errStoreClosed = errors.New("append exec log: the store is closed")

// append hands e to the committer and waits for its batch's outcome.
func (c *committer) append(ctx context.Context, e *model.ExecLogEntry) error {
	r := &appendReq{ctx: ctx, e: e, done: make(chan error, 1)}
	select {
	case c.reqs <- r:
	case <-c.stop:
		return errStoreClosed
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
			return errStoreClosed
		}
	}
}

// close stops the committer once it has answered every request it took.
// Closing again is a no-op.
func (c *committer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func (c *committer) run() {
	defer close(c.done)
	batch := make([]*appendReq, 0, maxAuditBatch)
	for {
		select {
		case r := <-c.reqs:
			batch = append(batch[:0], r)
		case <-c.stop:
			// Answer what was queued before the store closed.
			for {
				select {
				case r := <-c.reqs:
					r.done <- errStoreClosed
				default:
					return
				}
			}
		}
		// Everything that arrived while the last batch committed.
	drain:
		for len(batch) < maxAuditBatch {
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
func (c *committer) write(batch []*appendReq) {
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
	ctx, cancel := context.WithTimeout(context.Background(), auditBatchTimeout)
	defer cancel()
	entries := make([]*model.ExecLogEntry, len(live))
	for i, r := range live {
		entries[i] = r.e
	}
	err := c.commit(ctx, entries)
	c.batches.Add(1)
	if err == nil {
		c.appended.Add(int64(len(entries)))
	}
	if err == nil || len(live) == 1 || isStoreWide(err) {
		for _, r := range live {
			r.done <- err
		}
		return
	}
	for _, r := range live {
		r.done <- c.single(ctx, r.e)
	}
}

// isStoreWide reports whether err says the store takes no writes at all,
// or ran out of time: writing the entries one by one would fail the same.
func isStoreWide(err error) bool {
	return errors.Is(err, model.ErrStoreReadOnly) || errors.Is(err, model.ErrStoreFull) ||
		errors.Is(err, model.ErrStoreIO) || errors.Is(err, context.DeadlineExceeded)
}

// appendBatch appends entries in order in one transaction, retried while
// it loses a race for a chain's place (databases with row-level locking).
func (s *Store) appendBatch(ctx context.Context, entries []*model.ExecLogEntry) error {
	// On SQLite the wait for the write slot (the store's other writers)
	// ends with ctx, the batch's timeout; once it is the batch's turn the
	// transaction's BEGIN IMMEDIATE finds SQLite's write lock free (only
	// another process could hold it, and then busy_timeout, as long as the
	// batch's timeout, bounds the wait), no statement inside it waits for
	// another connection, and SQLite checks an interrupt only between
	// steps, never during the I/O of the statements and the COMMIT: a
	// context that can end would only have the driver start a watcher
	// goroutine for each (the BEGIN, the three statements, the COMMIT),
	// each one more thread woken on a lone exec's path.
	sctx := ctx
	if s.d.name == sqliteDialect.name {
		sctx = context.WithoutCancel(ctx)
	}
	var err error
	for range appendRetries {
		err = s.inTxOn(ctx, sctx, func(tx *sql.Tx) error {
			if err := s.lockChains(sctx, tx, entries); err != nil {
				return err
			}
			for _, e := range entries {
				if err := s.appendExecLog(sctx, tx, e); err != nil {
					return err
				}
			}
			return nil
		})
		if !errors.Is(err, model.ErrConflict) {
			break
		}
	}
	if d, ok := ctx.Deadline(); ok && err != nil && !errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(d) {
		// Out of time, though the transaction did not run on ctx (a BEGIN
		// that waited busy_timeout for another process's lock, say): the
		// store does not answer, for every entry alike (isStoreWide).
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}

// lockChains takes the chain locks of every sandbox in entries, in
// sandbox id order, so that two servers' batches never wait for each
// other's locks in a cycle.
func (s *Store) lockChains(ctx context.Context, tx *sql.Tx, entries []*model.ExecLogEntry) error {
	if s.d.chainLock == "" {
		return nil
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.SandboxID)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if _, err := tx.ExecContext(ctx, s.d.chainLock, id); err != nil {
			return fmt.Errorf("lock chain: %w", err)
		}
	}
	return nil
}

// GroupCommitStats returns how many group commits the audit log ran and
// how many entries they committed (tests check that appends arriving
// together share a transaction).
func (s *Store) GroupCommitStats() (batches, entries int64) {
	return s.audit.batches.Load(), s.audit.appended.Load()
}
