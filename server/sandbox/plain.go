package sandbox

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"

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
	u, err := s.store.Usage(ctx, acct.ID, s.hoursSince(acct, now), now)
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
// start instead of preceding it. When the driver says the sandbox's
// process has started (model.Spec.Started), the row is marked active
// with the endpoint, once the reservation is in, while the driver waits
// for the sidecar to answer: that second commit overlaps the wait too.
// The answer still comes only after both commits and the sidecar's
// answer; a driver that never calls Started gets the row marked active
// after its create, as startSandbox does.
//
// A crash while they run leaves at worst a sandbox that no row claims
// (the driver's start came first), which Reconcile deletes; a "creating"
// row, which Reconcile removes with whatever the driver had started; or
// an active row whose create was never answered, as a crash between the
// last commit and the answer always could: Reconcile adopts it if its
// sidecar answers by then, else marks it lost. A reservation that fails
// (the limits were taken meanwhile, or the store refuses) cancels the
// driver's create and tears down what it started; a create that fails
// after the row went active tears it down and removes the row.
func (s *Service) startCold(ctx context.Context, acct *model.Account, p createParams, sb *model.Sandbox) (*model.Sandbox, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	spec := s.driverSpec(sb, p) // read before the reservation's goroutine has sb
	var reserveErr error
	reserved := make(chan struct{}) // closed once reserveErr is set
	go func() {
		reserveErr = s.reserveSandboxes(ctx, acct, p, []*model.Sandbox{sb})
		if reserveErr != nil {
			cancel() // no use finishing the jail's start
		}
		close(reserved)
	}()
	early := newEarlyActivation(func(ep model.Endpoint) (*model.Sandbox, error) {
		<-reserved
		if reserveErr != nil {
			return nil, reserveErr
		}
		return s.recordActive(ctx, sb.ID, ep)
	})
	spec.Started = early.start
	ep, err := s.driver.Create(cctx, spec)
	<-reserved
	// An early commit ends before the row can be removed, so a late one
	// cannot outlive it.
	active, recorded, aerr := early.wait(ep)
	if reserveErr != nil {
		s.Discard(ctx, sb.ID)
		return nil, reserveErr
	}
	if err != nil {
		return nil, s.createFailed(ctx, sb.ID, err)
	}
	if !recorded {
		return s.activate(ctx, sb.ID, ep)
	}
	if aerr != nil {
		s.Discard(ctx, sb.ID)
		return nil, aerr
	}
	s.created(ctx, active)
	return active, nil
}

// earlyActivation runs a sandbox's "active" commit on its own goroutine
// from the driver's Started call (startCold).
type earlyActivation struct {
	commit  func(model.Endpoint) (*model.Sandbox, error)
	once    sync.Once
	started atomic.Bool
	ep      model.Endpoint
	done    chan struct{} // closed once sb and err are set
	sb      *model.Sandbox
	err     error
}

func newEarlyActivation(commit func(model.Endpoint) (*model.Sandbox, error)) *earlyActivation {
	return &earlyActivation{commit: commit, done: make(chan struct{})}
}

// start is model.Spec.Started: it begins the commit and returns.
func (a *earlyActivation) start(ep model.Endpoint) {
	a.once.Do(func() {
		a.ep = ep
		a.started.Store(true)
		go func() {
			defer close(a.done)
			a.sb, a.err = a.commit(ep)
		}()
	})
}

// wait waits for a commit start began, if any, and reports its outcome;
// recorded is false when none began, or when it recorded another
// endpoint than final, the one the driver's Create returned (then the
// row must be marked active again, with final).
func (a *earlyActivation) wait(final model.Endpoint) (_ *model.Sandbox, recorded bool, _ error) {
	if !a.started.Load() {
		return nil, false, nil
	}
	<-a.done
	if a.err == nil && !sameEndpoint(a.ep, final) {
		return nil, false, nil
	}
	return a.sb, true, a.err
}

func sameEndpoint(a, b model.Endpoint) bool {
	return a.Network == b.Network && a.Address == b.Address && a.Token == b.Token && bytes.Equal(a.CertPEM, b.CertPEM)
}
