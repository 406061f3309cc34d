package sandbox

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// lostGrace is how long a sandbox reported gone waits before it is marked
// lost. The server deleting a sandbox removes it from the substrate first
// and records it right after, so a deletion by any server sharing the
// store (this one too) is on record by then and is left alone.
const lostGrace = 2 * time.Second

// WatchLost marks sandboxes lost as the driver reports them, until ctx is
// done. Drivers that cannot tell (the local driver's sandboxes are this
// process's children) are not watched.
func (s *Service) WatchLost(ctx context.Context) {
	d := s.baseDriver()
	lw, ok := d.(model.LossWatcher)
	if !ok {
		return
	}
	grace := lostGrace
	if g, ok := d.(model.LossGracer); ok {
		grace = g.LostGrace()
	}
	pending := make(chan struct{}, 64) // bounds the marks in flight
	defer func() {
		for range cap(pending) {
			pending <- struct{}{}
		}
	}()
	report := func(id string) {
		pending <- struct{}{}
		go func() {
			defer func() { <-pending }()
			s.markLost(ctx, id, grace)
		}()
	}
	if sw, ok := d.(model.LossSweeper); ok {
		swept := make(chan struct{})
		defer func() { <-swept }()
		go func() {
			defer close(swept)
			s.sweepLost(ctx, sw, report)
		}()
	}
	for ctx.Err() == nil {
		err := lw.WatchLost(ctx, report)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "watch for lost sandboxes", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// sweepLost reports, every sw.LossSweepInterval until ctx is done, each
// active sandbox the driver's substrate lacks (model.LossSweeper): the
// losses a stalled watch missed. The rows are read before the driver's
// list, so every one of them had its pod before the list began (a row is
// active once its create returned); markLost decides each under its
// lifecycle lock, after the grace a deletion by a server needs to be
// recorded, and asks the driver again.
func (s *Service) sweepLost(ctx context.Context, sw model.LossSweeper, report func(id string)) {
	every := sw.LossSweepInterval()
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		active, err := s.store.SandboxesWithStatus(ctx, api.StatusActive)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "sweep for lost sandboxes: list active sandboxes", "err", err)
			}
			continue
		}
		if len(active) == 0 {
			continue
		}
		live, err := sw.Live(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "sweep for lost sandboxes", "err", err)
			}
			continue
		}
		for _, sb := range active {
			if !live[sb.ID] && sb.Destroying == "" {
				report(sb.ID)
			}
		}
	}
}

// markLost records sandbox id as lost once grace has passed, unless it
// was destroyed meanwhile.
func (s *Service) markLost(ctx context.Context, id string, grace time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(grace):
	}
	ctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
	defer cancel()
	s.loseSandbox(ctx, id, "it left the substrate while the server ran")
}

// loseSandbox tears down what is left of sandbox id, records it lost and
// says so in its audit log (and so to its watchers), unless it was no
// longer active. why ends "sandbox lost: …" in the log and the entry.
func (s *Service) loseSandbox(ctx context.Context, id, why string) {
	if s.calls.Ending(id) != nil {
		return // this server is destroying it: its sidecar's end is no loss
	}
	// Decided under the lifecycle lock, after a pause or resume under way
	// finished: a paused sandbox's sidecar is gone on purpose (a
	// filesystem pause ends it; the kube driver deletes its pod), and a
	// resumed one may answer elsewhere now.
	release, err := s.lockLifecycle(ctx, id)
	if err != nil {
		return // another server's change kept it past the wait: not a loss to decide now
	}
	defer release()
	cur, err := s.store.SandboxByID(ctx, id)
	if err != nil || !cur.Active() || s.probeAlive(ctx, id) {
		return
	}
	if reason := s.removing(cur); reason != "" {
		// Torn down on purpose, its removal not recorded yet (a crash,
		// or a database that could not take it): finish it.
		if _, err := s.destroyLocked(ctx, id, api.StatusDestroyed, reason); err != nil && !errors.Is(err, ErrNotActive) {
			s.log.ErrorContext(ctx, "finish the removal under way", "sandbox", id, "err", err)
		}
		return
	}
	switch sb, err := s.destroyLocked(ctx, id, api.StatusLost, model.ReasonLost); {
	case err == nil:
		s.log.WarnContext(ctx, "sandbox lost: "+why, "sandbox", id)
		s.recordLost(ctx, sb, why)
	case errors.Is(err, ErrNotActive), errors.Is(err, model.ErrNotFound):
		// destroyed on purpose, or never ours
	default:
		s.log.ErrorContext(ctx, "mark sandbox lost", "sandbox", id, "err", err)
	}
}

// goneWhy is the reason recorded for a paused sandbox the driver holds
// nothing of.
const goneWhy = "nothing of it was left on the host while it was paused (`boxkite down` ends paused sandboxes too)"

// loseGonePaused records a paused sandbox the driver holds nothing of as
// lost, at start-up.
func (s *Service) loseGonePaused(ctx context.Context, sb *model.Sandbox) {
	release, err := s.lockLifecycle(ctx, sb.ID)
	if err != nil {
		return
	}
	defer release()
	_ = s.loseGoneLocked(ctx, sb)
}

// loseGoneLocked records paused sb lost, under its lifecycle lock, and
// returns the answer to a call that needed it: 410 sandbox_lost.
func (s *Service) loseGoneLocked(ctx context.Context, sb *model.Sandbox) *api.Error {
	s.log.WarnContext(ctx, "sandbox lost: "+goneWhy, "sandbox", sb.ID, "account", sb.AccountID)
	switch lost, err := s.destroyLocked(ctx, sb.ID, api.StatusLost, model.ReasonLost); {
	case err == nil:
		s.recordLost(ctx, lost, goneWhy)
	case errors.Is(err, ErrNotActive):
	default:
		s.log.ErrorContext(ctx, "mark sandbox lost", "sandbox", sb.ID, "err", err)
	}
	return api.Errorf(http.StatusGone, api.CodeSandboxLost, "sandbox %s is lost: %s", sb.ID, goneWhy).
		WithHint("its processes and files are gone; restore a snapshot of it (`boxkite snapshots ls -s " + sb.ID + "`) or create a new sandbox")
}

// recordLost appends the sandbox_lost entry of a sandbox just marked lost.
func (s *Service) recordLost(ctx context.Context, sb *model.Sandbox, why string) {
	// A failure leaves the entry waiting in the audit gate.
	_ = s.audit(ctx, audit.Record{
		Sandbox: sb, Source: api.LogSourceSystem, Operation: "sandbox_lost",
		Detail: map[string]any{"reason": why}, Started: s.now(),
	})
}

// probeAlive reports whether the driver says sandbox id runs; false when
// it cannot tell.
func (s *Service) probeAlive(ctx context.Context, id string) bool {
	p, ok := s.baseDriver().(model.Prober)
	if !ok {
		return false
	}
	alive, err := p.Probe(ctx, id)
	return err == nil && alive
}

// LostAnswer is the answer to a call to a lost sandbox.
func LostAnswer(id string) *api.Error {
	return api.Errorf(http.StatusGone, api.CodeSandboxLost, "sandbox %s is lost: its sidecar stopped while it was active", id).
		WithHint("its processes and files are gone; create a new sandbox with `boxkite session create` (`boxkite log -s " + id + "` shows its history)")
}

// Unreachable is the answer when a call could not reach the sandbox's
// sidecar: 410 sandbox_lost, after marking it lost, when the driver says
// it is gone; else the plain 502.
func (s *Service) Unreachable(ctx context.Context, sb *model.Sandbox) *api.Error {
	if ae, ok := s.calls.Ending(sb.ID).(*api.Error); ok {
		return ae // destroyed under the call
	}
	d := s.baseDriver()
	if p, ok := d.(model.Prober); ok {
		if alive, err := p.Probe(ctx, sb.ID); err == nil && !alive {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
			defer cancel()
			s.loseSandbox(cctx, sb.ID, "its sidecar stopped while the server ran")
			return LostAnswer(sb.ID)
		}
	}
	return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not reach the sandbox's sidecar").
		WithHint("the sandbox may have stopped; check it with `boxkite session get` or create a new one")
}
