package auditlog

import (
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// getLog serves GET /v1/sandboxes/{id}/log?limit=&offset=: the sandbox's
// audit entries in chain order (oldest first), destroyed sandboxes included.
func (s *Service) getLog(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := httpx.LogPage(r)
	if err != nil {
		return err
	}
	sb, err := s.d.LoadSandbox(r)
	if err != nil {
		return err
	}
	return s.WritePage(w, r, sb.ID, limit, offset)
}

// WritePage answers with a page of the audit chain of id: a sandbox's,
// or an image build's.
func (s *Service) WritePage(w http.ResponseWriter, r *http.Request, id string, limit, offset int) error {
	// The head first: entries appended meanwhile follow it, never precede it.
	head, err := s.d.Store.ExecLogHead(r.Context(), id)
	if err != nil {
		return fmt.Errorf("read exec log head: %w", err)
	}
	entries, total, err := s.d.Store.ExecLog(r.Context(), id, limit, offset)
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
