package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// audit appends an entry for rec (auditLog.append).
func (s *Server) audit(ctx context.Context, rec audit.Record) error { return s.alog.Append(ctx, rec) }

// getLog serves GET /v1/sandboxes/{id}/log?limit=&offset=: the sandbox's
// audit entries in chain order (oldest first), destroyed sandboxes included.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) error {
	limit, err := httpx.QueryInt(r, "limit", api.DefaultLogLimit, 1, api.MaxLogLimit)
	if err != nil {
		return err
	}
	offset, err := httpx.QueryInt(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	sb, err := s.loadSandbox(r)
	if err != nil {
		return err
	}
	return s.writeLogPage(w, r, sb.ID, limit, offset)
}

// writeLogPage answers with a page of the audit chain of id: a sandbox's,
// or an image build's.
func (s *Server) writeLogPage(w http.ResponseWriter, r *http.Request, id string, limit, offset int) error {
	// The head first: entries appended meanwhile follow it, never precede it.
	head, err := s.store.ExecLogHead(r.Context(), id)
	if err != nil {
		return fmt.Errorf("read exec log head: %w", err)
	}
	entries, total, err := s.store.ExecLog(r.Context(), id, limit, offset)
	if err != nil {
		return fmt.Errorf("read exec log: %w", err)
	}
	page := api.LogPage{
		Entries: make([]api.LogEntry, len(entries)), Limit: limit, Offset: offset, Total: total,
		HeadSeq: head.Seq, HeadHash: head.RowHash,
	}
	for i, e := range entries {
		page.Entries[i] = e.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, page)
	return nil
}

// auditOpen returns the refusal for audited work while the gate is
// closed, else nil. Audited handlers call it before they act.
func (s *Server) auditOpen() error { return s.alog.Open() }
