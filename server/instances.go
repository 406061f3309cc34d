package server

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// The server's heartbeat (session 24). Servers sharing one database each
// keep a row in server_instances (model.InstanceStore) alive while they
// run: inserted by Init before the snapshots' Reconcile (so a pending
// snapshot's owner always beat before it reserved the row), renewed
// every heartbeatRenew for heartbeatTTL by Run, removed when Serve ends.
// Another server takes the pending snapshots of an instance whose row
// ended (a crash) for interrupted and fails them (server/snapshot,
// orphans.go), on its start and at each renewal of its own heartbeat;
// those of a live server are left to it. The times are this server's
// clock, as the lifecycle lease's (server/sandbox/lease.go): the servers'
// clocks must agree to well within heartbeatTTL. A sole server (SQLite)
// keeps no heartbeat: no other server reads it.
//
// The heartbeat is a lease with a fencing token (session 25): the store
// keeps it while renewals come before the lease ends and gives a greater
// one when the lease is taken again after it ended (this server stalled
// past heartbeatTTL, and others may have taken it for dead). The server
// keeps the token it got (Server.token); its snapshots record it and are
// completed only under it (server/snapshot, keys.go: copyAndRecord).

const (
	// heartbeatTTL is how long a heartbeat runs past its renewal.
	heartbeatTTL = 30 * time.Second
	// heartbeatRenew is how often Run renews it and sweeps the pending
	// snapshots of servers whose heartbeat ended.
	heartbeatRenew = heartbeatTTL / 3
	// heartbeatForget is how long the row of a server that died stays
	// after it ended (a starting server removes older ones).
	heartbeatForget = time.Hour
)

// instances is the store's heartbeats when other servers share it, nil
// for a sole server.
func (s *Server) instances() model.InstanceStore {
	if s.soleServer() {
		return nil
	}
	return s.store
}

// start records this server's heartbeat at its start (Init), before the
// reconciliation, and forgets those of servers that ended long ago
// (crashes: a clean shutdown removes its own).
func (s *Server) start(ctx context.Context) error {
	if err := s.beat(ctx); err != nil {
		return err
	}
	if s.instances() == nil {
		return nil
	}
	if err := s.store.ForgetInstances(ctx, s.now().Add(-heartbeatForget)); err != nil {
		s.log.WarnContext(ctx, "forget ended servers' heartbeats", "err", err)
	}
	return nil
}

// beat records this server's heartbeat, alive heartbeatTTL from now, and
// keeps the lease's token the store answers: a new one when the lease
// had ended (the snapshots this server reserved under the old token
// can no longer be completed: server/snapshot fails them).
func (s *Server) beat(ctx context.Context) error {
	if s.instances() == nil {
		return nil
	}
	old := s.token.Load()
	now := s.now()
	token, err := s.store.BeatInstance(ctx, s.instance, old, now, now.Add(heartbeatTTL))
	if err != nil {
		return err
	}
	s.token.Store(token)
	if old != 0 && token != old {
		s.log.WarnContext(ctx, "the server's heartbeat had lapsed: taken again under a new token; snapshots pending under the old one fail",
			"instance", s.instance, "token", token, "old_token", old)
	}
	return nil
}

// heartbeats renews this server's heartbeat at once (Init's may be long
// past) and then every heartbeatRenew until ctx is done, and after each
// renewal sweeps the pending snapshots of the servers whose heartbeat
// ended. It looks every ReaperInterval, by the server's clock (tests
// move it).
func (s *Server) heartbeats(ctx context.Context) {
	if s.instances() == nil {
		return
	}
	tick := time.NewTicker(s.cfg.ReaperInterval)
	defer tick.Stop()
	var last time.Time // the last renewal's time
	for {
		if now := s.now(); last.IsZero() || now.Sub(last) >= heartbeatRenew {
			last = now
			s.renew(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renew is one round of heartbeats: the renewal, then the sweep of
// pending snapshots (skipped when the renewal failed: a server that
// cannot write its heartbeat judges no other's).
func (s *Server) renew(ctx context.Context) {
	if s.cfg.HeartbeatForTests != nil {
		s.cfg.HeartbeatForTests()
	}
	if err := s.beat(ctx); err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "renew the server's heartbeat", "instance", s.instance, "err", err)
		}
		return
	}
	if err := s.snap.Sweep(ctx); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "fail the pending snapshots of ended servers", "err", err)
	}
}

// endInstance removes this server's heartbeat at a clean shutdown: the
// servers that remain fail, at their next heartbeat, the snapshots it
// left pending.
func (s *Server) endInstance(ctx context.Context) {
	if s.instances() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.store.EndInstance(ctx, s.instance); err != nil {
		s.log.WarnContext(ctx, "remove the server's heartbeat", "instance", s.instance, "err", err)
	}
}
