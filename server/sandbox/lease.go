package sandbox

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// The lifecycle lease (session 23). lifecycleLocks order the lifecycle
// changes of one sandbox in this process; servers sharing one Postgres
// database (the Helm chart's replicas) order them with a lease on the
// sandbox's row (model.SandboxStore.TakeSandboxLease), taken after the
// in-process lock and held as long as it: the driver work before a
// pause's, resume's or removal's conditional row update then never runs
// on two servers at once (resume ∥ resume, pause ∥ delete, resume ∥
// delete; bench/issue27/session22-snapclaim22.md). The lease runs
// leaseTTL from the holder's clock and is renewed every leaseRenew while
// held (a kube workspace copy, a snapshot's copy), so a server that dies
// holding it holds it no longer a leaseTTL later; the clocks of the
// servers must agree to well within leaseTTL.
//
// Only lifecycle changes take it (Pause, Resume, destroySandbox, the
// loss watch's decision, SnapshotControl.Hold, the reaper's auto-pause
// and removals through those): two writes each. The exec and create hot
// paths must not (issue 27 is their latency): a create's row is no other
// server's until it answered, and calls are answered from the row.
//
// A store only this server opens (SQLite: its owner lock refuses a
// second server) needs no lease: Config.SoleServer skips it.

const (
	// leaseTTL is how long a lease runs past its last take or renewal.
	leaseTTL = 30 * time.Second
	// leaseRenew is how often a holder renews it.
	leaseRenew = leaseTTL / 3
	// leaseWait bounds the wait for another server's lease (and the
	// caller's context does): a kube resume or workspace copy under way
	// there ends well within it.
	leaseWait = 2 * time.Minute
	// leasePollMin and leasePollMax bound the interval between tries of
	// a lease another server holds (doubling from the first).
	leasePollMin = 20 * time.Millisecond
	leasePollMax = 500 * time.Millisecond
)

// lockLifecycle takes sandbox id's lifecycle lock in this process and
// then, when other servers share the database, its lease there, and
// returns their release. It fails only when another server held the
// lease for longer than the wait (BusyAnswer) or ctx ended meanwhile.
// When the database cannot take the lease's write (full, failing) it goes
// on without one: a removal must work there (markDestroying), and the
// row updates after the driver work are conditional anyway.
func (s *Service) lockLifecycle(ctx context.Context, id string) (func(), error) {
	unlock := s.lifecycleLocks.Lock(id)
	if s.cfg.SoleServer {
		return unlock, nil
	}
	release, err := s.takeLease(ctx, id)
	if err != nil {
		unlock()
		return nil, err
	}
	return func() { release(); unlock() }, nil
}

// takeLease takes sandbox id's lease for this server, waiting while
// another holds it, and returns its release.
func (s *Service) takeLease(ctx context.Context, id string) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, leaseWait)
	defer cancel()
	told := false
	for delay := leasePollMin; ; delay = min(2*delay, leasePollMax) {
		now := s.now()
		took, err := s.store.TakeSandboxLease(ctx, id, s.instance, now, now.Add(leaseTTL))
		switch {
		case took:
			return s.holdLease(id), nil
		case errors.Is(err, model.ErrNotFound):
			return func() {}, nil // no row: nothing to order; the caller's reload answers
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "take the sandbox's lifecycle lease; going on without it", "sandbox", id, "err", err)
			return func() {}, nil
		}
		if !told && s.cfg.LockWaitForTests != nil {
			told = true
			s.cfg.LockWaitForTests(id)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, BusyAnswer(id)
		case <-t.C:
		}
	}
}

// holdLease renews sandbox id's lease, which this server took, every
// leaseRenew until the release it returns is called; the release ends
// the renewals and clears the lease.
func (s *Service) holdLease(id string) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(leaseRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), leaseRenew)
			now := s.now()
			held, err := s.store.TakeSandboxLease(ctx, id, s.instance, now, now.Add(leaseTTL))
			cancel()
			if err != nil || !held {
				s.log.Warn("renew the sandbox's lifecycle lease", "sandbox", id, "held", held, "err", err)
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), CleanupTimeout)
		defer cancel()
		if err := s.store.ReleaseSandboxLease(ctx, id, s.instance); err != nil {
			// It ends on its own a leaseTTL after the last renewal.
			s.log.Warn("release the sandbox's lifecycle lease", "sandbox", id, "err", err)
		}
	}
}

// BusyAnswer is the answer to a lifecycle change of sandbox id that
// another server's (a pause, resume, removal or snapshot under way there)
// kept waiting longer than it could.
func BusyAnswer(id string) *api.Error {
	return api.Errorf(http.StatusConflict, api.CodeConflict,
		"sandbox %s is busy: another server is pausing, resuming, deleting or snapshotting it", id).
		WithHint("retry in a minute; `boxkite session get " + id + "` shows its state")
}
