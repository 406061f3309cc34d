package server

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// Hooks for the watch, metrics and allowlist tests in server_test.

// SetWatchKeepAlive changes how often idle watch streams get a comment.
func (s *Server) SetWatchKeepAlive(d time.Duration) { s.watchKeepAlive = d }

// SetShutdownTimeout changes how long Serve waits for requests in flight.
func (s *Server) SetShutdownTimeout(d time.Duration) { s.shutdownTimeout = d }

// AppendAudit writes an audit entry for the sandbox as a handler does
// after an operation succeeded, and hands it to watchers.
func (s *Server) AppendAudit(ctx context.Context, sandboxID, accountID, operation string) error {
	return s.audit(ctx, audit.Record{
		Sandbox:   &model.Sandbox{ID: sandboxID, AccountID: accountID},
		Operation: operation,
		Started:   s.now(),
	})
}
