package server

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// newWebhooks builds the webhooks service when the store keeps webhooks
// (the SQL store does, behind the authorization layer, which the service
// repeats for its own store) and has the audit log queue audit_log.entry
// events.
func (s *Server) newWebhooks() error {
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	ws, ok := st.(webhooks.Store)
	if !ok {
		return nil
	}
	svc, err := webhooks.New(webhooks.Deps{
		Store: ws, Log: s.log, Now: func() time.Time { return s.now() },
		AllowLoopback: s.cfg.Webhooks.AllowLoopback, BackoffBase: s.cfg.Webhooks.BackoffBase, Poll: s.cfg.Webhooks.Poll,
	})
	if err != nil {
		return err
	}
	s.webhooks = svc
	s.alog.Committed = func(ctx context.Context, e *model.ExecLogEntry) {
		s.emit(ctx, e.AccountID, api.EventAuditLogEntry, e.ToAPI())
	}
	return nil
}

// emit queues a webhook event; a failure to queue it is logged, never the
// operation's.
func (s *Server) emit(ctx context.Context, accountID, event string, data any) {
	if s.webhooks == nil || accountID == "" {
		return
	}
	if err := s.webhooks.Emit(ctx, accountID, event, data); err != nil {
		s.log.ErrorContext(ctx, "queue webhook event", "event", event, "account", accountID, "err", err)
	}
}
