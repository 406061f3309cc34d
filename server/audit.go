package server

import (
	"context"

	"github.com/boxkite/boxkite/server/internal/audit"
)

// audit appends an entry for rec (audit.Log.Append).
func (s *Server) audit(ctx context.Context, rec audit.Record) error { return s.alog.Append(ctx, rec) }

// auditOpen returns the refusal for audited work while the gate is
// closed, else nil. Audited handlers call it before they act.
func (s *Server) auditOpen() error { return s.alog.Open() }
