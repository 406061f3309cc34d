package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// reapParallel bounds how many expired sandboxes are torn down at once.
const reapParallel = 8

// Reap destroys every active sandbox past its expires_at.
func (s *Service) Reap(ctx context.Context) {
	expired, err := s.store.ExpiredSandboxes(ctx, s.now())
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "list expired sandboxes", "err", err)
		}
		return
	}
	s.each(expired, func(sb *model.Sandbox) {
		ctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
		defer cancel()
		if sb.AutoPause {
			s.autoPause(ctx, sb)
			return
		}
		err := s.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonExpired)
		switch {
		case err == nil:
			s.log.InfoContext(ctx, "sandbox expired", "sandbox", sb.ID, "account", sb.AccountID)
		case errors.Is(err, ErrNotActive):
			// deleted by its owner meanwhile
		default:
			// destroy logged the cause; the next tick retries.
		}
	})
}

// pausedSweepInterval is how often the reaper looks for paused sandboxes
// past the server's retention.
const pausedSweepInterval = time.Minute

// ReapPaused destroys the paused sandboxes paused longer than
// MaxPausedAge (Tick calls it at most once a pausedSweepInterval).
func (s *Service) ReapPaused(ctx context.Context) {
	now := s.now()
	if s.cfg.MaxPausedAge < 0 {
		return
	}
	paused, err := s.store.SandboxesWithStatus(ctx, api.StatusPaused)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "list paused sandboxes", "err", err)
		}
		return
	}
	var old []*model.Sandbox
	for _, sb := range paused {
		if sb.PausedAt != nil && now.Sub(*sb.PausedAt) >= s.cfg.MaxPausedAge {
			old = append(old, sb)
		}
	}
	s.each(old, func(sb *model.Sandbox) {
		ctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
		defer cancel()
		if err := s.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonExpired); err == nil {
			s.log.InfoContext(ctx, "paused sandbox past its retention destroyed", "sandbox", sb.ID, "account", sb.AccountID)
		}
	})
}

// each runs fn on every sandbox, reapParallel at a time, and waits.
func (s *Service) each(sbs []*model.Sandbox, fn func(*model.Sandbox)) {
	sem := make(chan struct{}, reapParallel)
	var wg sync.WaitGroup
	for _, sb := range sbs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(sb)
		})
	}
	wg.Wait()
}

// Reconcile makes the store and the driver agree after a start, including
// one after a crash or SIGKILL:
//
//   - rows still "creating" were interrupted mid-create: whatever the
//     driver started is deleted and the row removed;
//   - active and paused rows with a removal under way (Destroying) are
//     torn down, whatever of them is left, and recorded destroyed
//     (removals.go);
//   - active rows whose sidecar answers /health and takes the row's token
//     (all checked in parallel, within healthTimeout in total), or that the
//     driver froze while the host's disk is full (frozen.go), are adopted
//     as they are;
//   - active rows whose sidecar does not answer, or refuses the row's
//     token, are marked lost, and the driver is told to clean up after
//     them;
//   - paused rows are paused again, in case a crash came between the row
//     and the driver (pause.go), and kept;
//   - sandboxes the driver has that no active or paused row claims are
//     deleted.
func (s *Service) Reconcile(ctx context.Context) error {
	creating, err := s.store.SandboxesWithStatus(ctx, model.StatusCreating)
	if err != nil {
		return fmt.Errorf("list sandboxes being created: %w", err)
	}
	for _, sb := range creating {
		s.log.WarnContext(ctx, "removing sandbox interrupted while being created", "sandbox", sb.ID)
		s.Discard(ctx, sb.ID)
	}

	active, err := s.store.SandboxesWithStatus(ctx, api.StatusActive)
	if err != nil {
		return fmt.Errorf("list active sandboxes: %w", err)
	}
	active = s.finishRemovalsAtStart(ctx, active)
	alive := make([]bool, len(active))
	hctx, cancel := context.WithTimeout(ctx, s.d.HealthTimeout())
	var wg sync.WaitGroup
	for i, sb := range active {
		wg.Go(func() { alive[i] = s.SidecarHealthy(hctx, sb) || s.frozenForStorage(ctx, sb.ID) })
	}
	wg.Wait()
	cancel()

	// handled holds the ids dealt with above: adopted, or lost and deleted.
	handled := map[string]bool{}
	adopted, lost := 0, 0
	for i, sb := range active {
		handled[sb.ID] = true
		if alive[i] {
			adopted++
			s.noteOlderSidecar(ctx, sb.ID)
			if err := s.reopenEgress(ctx, sb); err != nil {
				s.log.ErrorContext(ctx, "reopen egress of adopted sandbox", "sandbox", sb.ID, "err", err)
			}
			continue
		}
		lost++
		if err := s.reconcileLost(ctx, sb); err != nil {
			return err
		}
	}

	paused, err := s.reconcilePaused(ctx)
	if err != nil {
		return err
	}
	for _, id := range paused {
		handled[id] = true
	}

	observed, err := s.driver.List(ctx)
	if err != nil {
		return fmt.Errorf("list driver sandboxes: %w", err)
	}
	orphans := 0
	for _, o := range observed {
		if handled[o.ID] {
			continue
		}
		orphans++
		if err := s.driver.Delete(ctx, o.ID); err != nil {
			s.log.ErrorContext(ctx, "delete orphaned sandbox", "sandbox", o.ID, "err", err)
		}
	}
	s.log.InfoContext(ctx, "reconciled sandboxes", "adopted", adopted, "lost", lost, "paused", len(paused),
		"interrupted", len(creating), "orphans_deleted", orphans)
	return nil
}

// reconcileLost destroys an active sandbox whose sidecar did not answer at
// start as lost, and records it lost even if the driver could not clean
// up after it.
func (s *Service) reconcileLost(ctx context.Context, sb *model.Sandbox) error {
	s.log.WarnContext(ctx, "sandbox lost: its sidecar does not answer", "sandbox", sb.ID, "account", sb.AccountID)
	const why = "its sidecar did not answer when the server started"
	err := s.Destroy(ctx, sb.ID, api.StatusLost, model.ReasonLost)
	if err == nil {
		s.recordLost(ctx, sb, why)
	}
	if err != nil && !errors.Is(err, ErrNotActive) {
		// The driver could not clean up; still record what we know.
		if _, uerr := s.store.UpdateSandbox(ctx, sb.ID, func(sb *model.Sandbox) error {
			now := s.now()
			sb.Status, sb.DestroyReason, sb.DestroyedAt = api.StatusLost, model.ReasonLost, &now
			return nil
		}); uerr != nil {
			return fmt.Errorf("mark sandbox %s lost: %w", sb.ID, uerr)
		}
		s.recordLost(ctx, sb, why)
	}
	return nil
}

// noteOlderSidecar tells the operator when an adopted sandbox's sidecar
// speaks an older protocol than this server (its health check's answer
// stated it): what it lacks falls back or is refused
// (docs/architecture.md, "Sidecar protocol versions") until the sandbox
// is started again.
func (s *Service) noteOlderSidecar(ctx context.Context, id string) {
	if v, ok := s.sidecars.Protocol(id); ok && v < api.SidecarProtocol {
		s.log.WarnContext(ctx, "adopted sandbox's sidecar speaks an older protocol; features it lacks fall back or are refused until it is started again",
			"sandbox", id, "sidecar_protocol", v, "server_protocol", api.SidecarProtocol)
	}
}

// SidecarHealthy reports whether the sandbox's sidecar answers GET /health
// and takes the row's token. The token matters after a crash: a warm
// create commits its row, with the claimed token, while the pool member's
// sidecar answers the claim, and a sidecar that refused the claim keeps
// the pool's token; adopting it would leave an active sandbox that
// refuses every call (bench/issue27/session13-warm13.md). A sidecar too
// old to check a token on /health answers 200 as before.
func (s *Service) SidecarHealthy(ctx context.Context, sb *model.Sandbox) bool {
	client, err := s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sidecar/health", nil)
	if err != nil {
		return false
	}
	if sb.Endpoint.Token != "" {
		req.Header.Set(api.HeaderSidecarToken, sb.Endpoint.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
