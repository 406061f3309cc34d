package server

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// listenAudit runs the store's AuditListener, if it has one, until ctx is
// done, reconnecting after failures.
func (s *Server) listenAudit(ctx context.Context) {
	l, ok := s.rawStore().(model.AuditListener)
	if !ok {
		return
	}
	s.keepListening(ctx, "audit entries", func() error {
		return l.ListenAudit(ctx,
			func(sandboxID, _ string) { s.alog.Broker.Notify(sandboxID) },
			s.alog.Broker.NotifyAll)
	})
}

// keepListening runs listen (a store's LISTEN for what other servers do)
// until ctx is done or it returns nil, again after each failure, backing
// off up to 10 s.
func (s *Server) keepListening(ctx context.Context, what string, listen func() error) {
	backoff := 100 * time.Millisecond
	for {
		start := time.Now()
		err := listen()
		if ctx.Err() != nil || err == nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		s.log.WarnContext(ctx, "listen for "+what+" of other servers", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// rawStore is the store behind the authorization layer, for the optional
// interfaces a store implements that are not data access (its LISTEN for
// other servers' notices).
func (s *Server) rawStore() model.Store { return s.store.(*authz.Store).Unwrap() }
