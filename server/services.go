package server

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/preview"
	"github.com/boxkite/boxkite/server/snapshot"
	"github.com/boxkite/boxkite/server/storagesync"
	"github.com/boxkite/boxkite/server/webhooks"
)

// The services the server builds over parts only some stores and
// drivers have: snapshots (a model.SnapshotDriver), previews and webhooks
// (stores of their own, which the SQL store implements). What they need
// of the sandbox lifecycle, server/sandbox implements
// (SnapshotControl, PreviewControl).

// newSnapshots builds the snapshot service on s's store and driver.
func (s *Server) newSnapshots() *snapshot.Service {
	d := s.baseDriver()
	sd, _ := d.(model.SnapshotDriver)
	return snapshot.New(snapshot.Config{
		Store: s.store, Driver: sd, Control: s.sandboxes.SnapshotControl(), DriverName: s.cfg.DriverName,
		Limit: s.cfg.SnapshotLimit, MaxFork: s.cfg.MaxCount, Log: s.log, Now: func() time.Time { return s.now() },
		Remote: snapshotRemote(s.cfg.Storage), RemotePrefix: s.cfg.Storage.Prefix,
		UseImage: s.images.Use, Instance: s.instance, Instances: s.instances(), Token: s.token.Load,
	})
}

// snapshotRemote is the object storage snapshots are kept in: the
// workspace sync's backend, when one is configured (docs/storage.md).
func snapshotRemote(c StorageConfig) snapshot.Remote {
	if c.Backend == nil {
		return nil
	}
	return snapshotBucket{c.Backend}
}

// snapshotBucket is a storagesync.Backend as a snapshot.Remote.
type snapshotBucket struct{ storagesync.Backend }

// ListKeys lists the keys under prefix (snapshot.Remote).
func (b snapshotBucket) ListKeys(ctx context.Context, prefix string, fn func(key string) error) error {
	return b.List(ctx, prefix, func(o storagesync.Object) error { return fn(o.Key) })
}

// newPreviews returns the preview service when the store keeps previews.
func (s *Server) newPreviews() error {
	// Previews are not model.Store's: the SQL store behind the
	// authorization layer keeps them, every query scoped by account but
	// the token's own look-up, which is what authenticates a visit.
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	ps, ok := st.(preview.Store)
	if !ok {
		return nil
	}
	p, err := preview.New(ps, s.sandboxes.PreviewControl(), preview.Config{BaseURL: s.cfg.PreviewBaseURL, Log: s.log, Now: func() time.Time { return s.now() }})
	if err != nil {
		return err
	}
	s.preview = p
	return nil
}

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
	d := webhooks.Deps{
		Store: ws, Log: s.log, Now: func() time.Time { return s.now() },
		AllowLoopback: s.cfg.Webhooks.AllowLoopback, BackoffBase: s.cfg.Webhooks.BackoffBase, Poll: s.cfg.Webhooks.Poll,
		PublicURL: s.cfg.PublicURL,
	}
	if sh, ok := st.(interface{ Shared() bool }); ok && !sh.Shared() {
		d.SoleServer = true // no other server adds subscriptions behind this one's back
	}
	if kr := s.cfg.Secrets.Keyring(); kr != nil {
		d.Sealer = kr // signing secrets and HEC tokens encrypted at rest
	}
	svc, err := webhooks.New(d)
	if err != nil {
		return err
	}
	s.webhooks = svc
	s.alog.Committed = func(ctx context.Context, e *model.ExecLogEntry) {
		if e.AccountID == "" {
			return
		}
		// The entry's wire form is built only for an account that has
		// subscriptions: every exec commits one.
		err := s.webhooks.EmitFunc(ctx, e.AccountID, api.EventAuditLogEntry, func() any { return e.ToAPI() })
		if err != nil {
			s.log.ErrorContext(ctx, "queue webhook event", "event", api.EventAuditLogEntry, "account", e.AccountID, "err", err)
		}
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
