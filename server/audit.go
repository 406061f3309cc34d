package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// audit appends an entry for rec (auditLog.append).
func (s *Server) audit(ctx context.Context, rec audit.Record) error { return s.alog.Append(ctx, rec) }

// getLog serves GET /v1/sandboxes/{id}/log?limit=&offset=: the sandbox's
// audit entries in chain order (oldest first), destroyed sandboxes included.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryInt(r, "limit", api.DefaultLogLimit, 1, api.MaxLogLimit)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, 0, 1<<31-1)
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

// queryInt reads an integer query parameter within [lo, hi]; absent means def.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		msg := fmt.Sprintf("%s must be an integer between %d and %d", name, lo, hi)
		return 0, &api.Error{
			Status: http.StatusUnprocessableEntity, Code: api.CodeValidation, Message: msg,
			Details: []httpx.FieldError{{Loc: []string{"query", name}, Msg: msg, Type: "value_error"}},
		}
	}
	return n, nil
}

// auditOpen returns the refusal for audited work while the gate is
// closed, else nil. Audited handlers call it before they act.
func (s *Server) auditOpen() error { return s.alog.Open() }
