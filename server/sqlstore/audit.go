package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

const execLogColumns = `id, sandbox_id, seq, account_id, source, operation, detail, exit_code, output_truncated,
	started_at, duration_ms, prev_hash, row_hash`

// appendRetries bounds retries of an append that lost a race for its
// place in the chain. SQLite never loses one (BEGIN IMMEDIATE serialises
// writers); databases with row-level locking can.
const appendRetries = 5

// AppendExecLog implements model.AuditStore. It returns once e is
// committed, in a group commit with the appends that arrived with it
// (groupcommit.go).
func (s *Store) AppendExecLog(ctx context.Context, e *model.ExecLogEntry) error {
	err := s.audit.Append(ctx, e)
	if errors.Is(err, sqldb.ErrClosed) {
		return fmt.Errorf("append exec log: %w", err)
	}
	return err
}

// appendOne appends e in a transaction of its own: what the group
// committer falls back to when a batch fails for one entry's reason.
func (s *Store) appendOne(ctx context.Context, e *model.ExecLogEntry) error {
	return s.appendBatch(ctx, []*model.ExecLogEntry{e})
}

// txStmt is the cached statement for a hot query, bound to tx.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := s.cached(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// appendExecLog appends e in tx, which holds e's chain lock (lockChains).
func (s *Store) appendExecLog(ctx context.Context, tx *sql.Tx, e *model.ExecLogEntry) error {
	// The head the last append recorded, not exec_log's newest row: rows
	// removed from the end behind the server's back then show as a gap
	// before the next entry instead of being silently written over.
	var seq int64
	prev := api.GenesisHash
	head, err := s.txStmt(ctx, tx, `SELECT seq, row_hash FROM exec_log_heads WHERE sandbox_id = ?`)
	if err != nil {
		return fmt.Errorf("read chain head: %w", err)
	}
	err = head.QueryRowContext(ctx, e.SandboxID).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read chain head: %w", err)
	}
	e.Seq = seq + 1
	if err := e.Seal(prev); err != nil {
		return err
	}
	var exit sql.NullInt64
	if e.ExitCode != nil {
		exit = sql.NullInt64{Int64: int64(*e.ExitCode), Valid: true}
	}
	insert, err := s.txStmt(ctx, tx, `INSERT INTO exec_log (`+execLogColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("insert exec log entry: %w", err)
	}
	_, err = insert.ExecContext(ctx,
		e.ID, e.SandboxID, e.Seq, e.AccountID, e.Source, e.Operation, string(e.Detail), exit, e.OutputTruncated,
		micros(e.StartedAt), e.DurationMS, e.PrevHash, e.RowHash)
	if err != nil {
		return fmt.Errorf("insert exec log entry: %w", s.mapErr(err))
	}
	moveHead, err := s.txStmt(ctx, tx, `INSERT INTO exec_log_heads (sandbox_id, seq, row_hash) VALUES (?, ?, ?)
		ON CONFLICT (sandbox_id) DO UPDATE SET seq = excluded.seq, row_hash = excluded.row_hash`)
	if err != nil {
		return fmt.Errorf("record chain head: %w", err)
	}
	if _, err := moveHead.ExecContext(ctx, e.SandboxID, e.Seq, e.RowHash); err != nil {
		return fmt.Errorf("record chain head: %w", s.mapErr(err))
	}
	if s.d.notifyAppend != "" {
		// Delivered at commit, and only if the transaction commits.
		if _, err := tx.ExecContext(ctx, s.d.notifyAppend, e.SandboxID+":"+e.ID); err != nil {
			return fmt.Errorf("notify append: %w", err)
		}
	}
	return nil
}

// ExecLog implements model.AuditStore.
func (s *Store) ExecLog(ctx context.Context, sandboxID string, limit, offset int) ([]*model.ExecLogEntry, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM exec_log WHERE sandbox_id = ?`), sandboxID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count exec log: %w", err)
	}
	out, err := s.queryExecLog(ctx, `SELECT `+execLogColumns+` FROM exec_log
		WHERE sandbox_id = ? ORDER BY seq LIMIT ? OFFSET ?`, sandboxID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// ExecLogHead implements model.AuditStore.
func (s *Store) ExecLogHead(ctx context.Context, sandboxID string) (model.ExecLogHead, error) {
	h := model.ExecLogHead{RowHash: api.GenesisHash}
	err := s.db.QueryRowContext(ctx, s.q(`SELECT seq, row_hash FROM exec_log_heads WHERE sandbox_id = ?`), sandboxID).
		Scan(&h.Seq, &h.RowHash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("read chain head: %w", err)
	}
	return h, nil
}

// ExecLogAfter implements model.AuditStore.
func (s *Store) ExecLogAfter(ctx context.Context, sandboxID string, afterSeq int64, limit int) ([]*model.ExecLogEntry, error) {
	return s.queryExecLog(ctx, `SELECT `+execLogColumns+` FROM exec_log
		WHERE sandbox_id = ? AND seq > ? ORDER BY seq LIMIT ?`, sandboxID, afterSeq, limit)
}

// ExecLogSeq implements model.AuditStore.
func (s *Store) ExecLogSeq(ctx context.Context, sandboxID, entryID string) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT seq FROM exec_log WHERE id = ? AND sandbox_id = ?`), entryID, sandboxID).Scan(&seq)
	if err != nil {
		return 0, s.mapErr(err)
	}
	return seq, nil
}

func (s *Store) queryExecLog(ctx context.Context, query string, args ...any) ([]*model.ExecLogEntry, error) {
	return queryAll(ctx, s, "exec log", scanExecLog, query, args...)
}

func scanExecLog(r rowScanner) (*model.ExecLogEntry, error) {
	var e model.ExecLogEntry
	var detail string
	var exit sql.NullInt64
	var started int64
	if err := r.Scan(&e.ID, &e.SandboxID, &e.Seq, &e.AccountID, &e.Source, &e.Operation, &detail, &exit,
		&e.OutputTruncated, &started, &e.DurationMS, &e.PrevHash, &e.RowHash); err != nil {
		return nil, err
	}
	e.Detail = []byte(detail)
	e.StartedAt = fromMicros(started)
	if exit.Valid {
		code := int(exit.Int64)
		e.ExitCode = &code
	}
	return &e, nil
}
