package sandbox

import (
	"context"

	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// plain reports whether p asks for one sandbox with nothing recorded
// beside its row: no image, volume, secret, egress or snapshot.
func plain(p createParams) bool {
	return p.count == 1 && p.imageID == "" && p.imageRoot == "" && p.fromSnapshot == "" &&
		len(p.volumes) == 0 && len(p.egress) == 0 && len(p.secrets) == 0
}

// startPlain creates a plain sandbox: from the warm pool when the driver
// has a member ready (startWarm), else cold with its reservation written
// while the driver starts it (startCold). The limits are checked first
// from a read, so that a create they refuse neither takes a member nor
// starts a jail; the reservation checks them again, atomically.
//
// ok false means nothing was done and the caller creates the sandbox as
// usual.
func (s *Service) startPlain(ctx context.Context, acct *model.Account, p createParams) (_ *model.Sandbox, ok bool, _ error) {
	if !plain(p) {
		return nil, false, nil
	}
	now := s.now()
	u, err := s.store.Usage(ctx, acct.ID, limits.MonthStart(now), now)
	if err != nil {
		return nil, false, nil // the usual path reports the store's failure
	}
	if err := s.checkLimits(acct, p, u); err != nil {
		return nil, true, err
	}
	sb := s.newSandboxRecord(acct, p)
	if sb, claimed, err := s.startWarm(ctx, acct, p, sb); claimed {
		return sb, true, err
	}
	sb, err = s.startCold(ctx, acct, p, sb)
	return sb, true, err
}

// startCold starts the plain sandbox sb with the driver while its
// reservation (the "creating" row, after the limits' atomic check) is
// committed on another goroutine: the commit's fsync overlaps the jail's
// start instead of preceding it. Then the row is marked active with the
// endpoint, before the answer, as startSandbox does.
//
// A crash while both run leaves at worst a sandbox that no row claims (the
// driver's start came first), which Reconcile deletes, or a "creating" row,
// which Reconcile removes with whatever the driver had started. A
// reservation that fails (the limits were taken meanwhile, or the store
// refuses) cancels the driver's create and tears down what it started.
func (s *Service) startCold(ctx context.Context, acct *model.Account, p createParams, sb *model.Sandbox) (*model.Sandbox, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	spec := s.driverSpec(sb, p) // read before the reservation's goroutine has sb
	reserved := make(chan error, 1)
	go func() {
		err := s.reserveSandboxes(ctx, acct, p, []*model.Sandbox{sb})
		if err != nil {
			cancel() // no use finishing the jail's start
		}
		reserved <- err
	}()
	ep, err := s.driver.Create(cctx, spec)
	if rerr := <-reserved; rerr != nil {
		s.Discard(ctx, sb.ID)
		return nil, rerr
	}
	if err != nil {
		return nil, s.createFailed(ctx, sb.ID, err)
	}
	return s.activate(ctx, sb.ID, ep)
}
