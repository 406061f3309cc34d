package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
// The writes waiting when the slot comes free are group-committed, as
// the audit appends are (Committer): with synchronous=FULL each
// commit is an fsync, and 100 creates at once (two writes each) spent
// most of their burst in 200 commits one after the other (session 10).
// The writer that takes the slot leads: it runs every write queued behind
// it, in arrival order, in one transaction, each inside a savepoint of its
// own, commits once, and answers each writer; it then hands the slot to
// the head of the queue that formed meanwhile, which leads the next batch.
// A writer returns only once the transaction that ran its write has
// committed (or with its write's error), so durability is unchanged. A
// write that fails is rolled back to its savepoint and fails alone; a
// batch that cannot commit for a reason that is not the store's (or whose
// transaction a failing write took down with it) runs its writes again
// one transaction each, so one write's error is never another's. So a
// transaction's body may run more than once, as on a retried conflict.
// Alone in the queue, a write runs as it did without batching: a lone
// statement on the pool, a transaction under its own context.
//
// A write must never start inside another's transaction (a method called
// from a transaction's callback): it would wait for the slot its own
// caller holds until its context ends. server/sqlstore's
// TestNoWriteInsideATransaction checks its code for it.

// maxWriteBatch bounds the writes one group commit runs, so that one
// transaction stays short while writes keep arriving.
const maxWriteBatch = 128

// writeBatchTimeout bounds a batch's transaction (its BEGIN, which may
// wait busy_timeout for another process, and its COMMIT). A batch does not
// run under one writer's context: a writer whose write is in a batch
// waits for the batch, so that an error always means its write was not
// committed. Each write's statements still run under its own context.
const writeBatchTimeout = 30 * time.Second

// WriteSlot is the queue of a SQLite database's writes (above).
type WriteSlot struct {
	db *sql.DB
	// storeWide reports whether err says no write can commit now (the
	// database is read-only, full, failing, or out of time): a batch that
	// failed so is not run again write by write.
	storeWide func(error) bool

	mu    sync.Mutex
	held  bool     // a leader runs a batch
	queue []*write // in arrival order

	// batches counts the transactions that ran more than one write, and
	// batched the writes they committed (Stats).
	batches, batched atomic.Int64
}

// A write is one writer's turn: a transaction's body (fn), or a lone
// statement (query, args) when fn is nil.
type write struct {
	ctx   context.Context
	txCtx context.Context // what fn's transaction runs on when it runs alone
	fn    func(*sql.Tx) error
	query string
	args  []any
	res   sql.Result // the lone statement's, once done answered nil
	done  chan error // buffered, one: the outcome, or errLead
}

// errLead is sent to a queued writer to hand it the slot: it leads the
// next batch.
var errLead = errors.New("lead the next batch")

// panicked carries a write's panic to its writer's goroutine: the leader
// runs other writers' transaction bodies.
type panicked struct {
	v     any
	stack []byte
}

func (p *panicked) Error() string { return fmt.Sprintf("write panicked: %v\n%s", p.v, p.stack) }

// NewWriteSlot returns the write slot of db. storeWide reports whether
// an error says no write can commit now (the database is read-only,
// full, failing, or out of time): a batch that failed so is not run again
// write by write.
func NewWriteSlot(db *sql.DB, storeWide func(error) bool) *WriteSlot {
	return &WriteSlot{db: db, storeWide: storeWide}
}

// TxOn runs fn in a transaction once it is its turn, which it waits for
// as long as ctx allows; alone in its batch, the transaction runs on
// txCtx. fn must not start a write of its own through the slot, and may
// run more than once.
func (w *WriteSlot) TxOn(ctx, txCtx context.Context, fn func(*sql.Tx) error) error {
	return w.run(&write{ctx: ctx, txCtx: txCtx, fn: fn})
}

// Exec runs a lone statement once it is its turn.
func (w *WriteSlot) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	r := &write{ctx: ctx, query: query, args: args}
	if err := w.run(r); err != nil {
		return nil, err
	}
	return r.res, nil
}

// run queues r, waiting behind the writes that came before for as long as
// r's context allows, and returns once r was committed or failed. A
// writer whose context ends while it waits leaves the queue with an error
// that wraps its context's; once its write is in a batch it waits for the
// batch's outcome.
func (w *WriteSlot) run(r *write) error {
	if err := r.ctx.Err(); err != nil {
		return fmt.Errorf("wait for the database's write slot: %w", err)
	}
	r.done = make(chan error, 1)
	w.mu.Lock()
	if !w.held {
		w.held = true
		w.mu.Unlock()
		return w.lead(r)
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	var err error
	select {
	case err = <-r.done:
	case <-r.ctx.Done():
		w.mu.Lock()
		i := slices.Index(w.queue, r)
		if i >= 0 {
			w.queue = slices.Delete(w.queue, i, i+1)
		}
		w.mu.Unlock()
		if i >= 0 {
			return fmt.Errorf("wait for the database's write slot: %w", r.ctx.Err())
		}
		err = <-r.done // taken into a batch, or handed the slot, meanwhile
	}
	if err == errLead {
		return w.lead(r) // r's batch answers r's dead context, if so
	}
	return outcome(err)
}

// outcome re-panics a write's panic in its writer's goroutine.
func outcome(err error) error {
	var p *panicked
	if errors.As(err, &p) {
		panic(fmt.Sprintf("%v [recovered from the write slot's leader]\n%s", p.v, p.stack))
	}
	return err
}

// lead runs r and the writes queued behind it, hands the slot on, and
// returns r's outcome. The caller holds the slot.
func (w *WriteSlot) lead(r *write) error {
	defer w.handOn()
	w.mu.Lock()
	n := min(len(w.queue), maxWriteBatch-1)
	batch := make([]*write, 0, n+1)
	batch = append(batch, r)
	batch = append(batch, w.queue[:n]...)
	w.queue = slices.Delete(w.queue, 0, n)
	w.mu.Unlock()
	w.commit(batch)
	return outcome(<-r.done)
}

// handOn hands the slot to the head of the queue, or frees it.
func (w *WriteSlot) handOn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		w.held = false
		return
	}
	next := w.queue[0]
	w.queue = slices.Delete(w.queue, 0, 1)
	next.done <- errLead
}

// commit runs batch and answers each of its writes.
func (w *WriteSlot) commit(batch []*write) {
	live := batch[:0:len(batch)]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- fmt.Errorf("wait for the database's write slot: %w", err)
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		w.alone(live[0])
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeBatchTimeout)
	defer cancel()
	var ran []*write // whose writes the transaction holds
	rest := live     // not yet run, or to run again
	err := RunTx(ctx, w.db, func(tx *sql.Tx) error {
		for len(rest) > 0 {
			r := rest[0]
			if _, err := tx.ExecContext(ctx, "SAVEPOINT w"); err != nil {
				return fmt.Errorf("savepoint: %w", err)
			}
			if err := r.inTx(tx); err != nil {
				// r's error is its own: its changes go, the others' stay. A
				// savepoint that is gone says r took the transaction down
				// with it (an interrupt, say): the others run again.
				rest = rest[1:]
				r.done <- err
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO w"); err != nil {
					return fmt.Errorf("roll back a failed write: %w", err)
				}
				if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
					return fmt.Errorf("release savepoint: %w", err)
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, "RELEASE w"); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
			rest = rest[1:]
			ran = append(ran, r)
		}
		return nil
	})
	if err == nil {
		w.batches.Add(1)
		w.batched.Add(int64(len(ran)))
		for _, r := range ran {
			r.done <- nil
		}
		return
	}
	again := append(ran, rest...)
	if w.storeWide(err) {
		for _, r := range again {
			r.done <- err
		}
		return
	}
	for _, r := range again {
		w.alone(r)
	}
}

// alone runs r as it runs without batching, and answers it.
func (w *WriteSlot) alone(r *write) {
	if r.fn == nil {
		err := catch(func() (err error) {
			r.res, err = w.db.ExecContext(r.ctx, r.query, r.args...)
			return err
		})
		r.done <- err
		return
	}
	r.done <- catch(func() error { return RunTx(r.txCtx, w.db, r.fn) })
}

// inTx runs r's write in tx.
func (r *write) inTx(tx *sql.Tx) error {
	return catch(func() (err error) {
		if r.fn != nil {
			return r.fn(tx)
		}
		r.res, err = tx.ExecContext(r.ctx, r.query, r.args...)
		return err
	})
}

// catch returns f's error, or its panic as a *panicked.
func catch(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{v: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// RunTx runs fn in a transaction of db's and commits it when fn returns
// nil.
func RunTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// Waiting returns how many writers wait for the slot (tests).
func (w *WriteSlot) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Stats returns how many transactions of the slot ran more than one
// write, and how many writes they committed (tests check that writes
// waiting together share a commit).
func (w *WriteSlot) Stats() (batches, writes int64) {
	return w.batches.Load(), w.batched.Load()
}
