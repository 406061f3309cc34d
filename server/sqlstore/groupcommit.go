package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Audit appends are group-committed (issue 27) by a sqldb.Committer:
// appends that arrive while a batch commits are written together, in
// arrival order, each caller returning once its own entry is committed;
// the chain order is the order appends reached the committer.

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
	return s.audit.Stats()
}
