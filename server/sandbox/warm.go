package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// startWarm creates the plain sandbox sb (startPlain) from the driver's
// warm pool when it has a member ready (model.WarmClaimer), and records
// it in one write: its row, active with the endpoint, inserted by the
// same reservation that checks the limits. The driver runs that write
// (the record passed to ClaimWarm) once the claim's request is in the
// member's sidecar's socket, while the sidecar answers it, so the commit
// and the claim's round trip overlap (bench/issue27/session12-warm12.md).
// Crash safety, whatever the instant: before the commit, the claimed
// sandbox has no row and Reconcile deletes it; after it, the row names a
// sidecar that serves the claim even with this process gone, and the
// restart adopts it; the create answers only after both. A claim that
// fails after the commit removes the row again (the driver has deleted
// the sandbox), and the create goes on cold.
//
// claimed false means nothing was done and the caller creates the
// sandbox cold.
func (s *Service) startWarm(ctx context.Context, acct *model.Account, p createParams, sb *model.Sandbox) (_ *model.Sandbox, claimed bool, _ error) {
	w, isClaimer := s.driver.(model.WarmClaimer)
	if !isClaimer {
		return nil, false, nil
	}
	status, endpoint := sb.Status, sb.Endpoint
	recorded := false // the row is written
	var recErr error
	// Called on this goroutine, by ClaimWarm.
	record := func(ep model.Endpoint) error {
		sb.Status, sb.Endpoint = api.StatusActive, ep
		// As the store gives rows back (the cold path answers with the
		// row read back): microseconds, UTC.
		sb.CreatedAt, sb.ExpiresAt = time.UnixMicro(sb.CreatedAt.UnixMicro()).UTC(), time.UnixMicro(sb.ExpiresAt.UnixMicro()).UTC()
		// Recorded even if the client has gone away: the sandbox exists now.
		recErr = s.reserveSandboxes(context.WithoutCancel(ctx), acct, p, []*model.Sandbox{sb})
		recorded = recErr == nil
		return recErr
	}
	// The claim goes over the sandbox's own client, whose connection then
	// serves the first exec.
	ep, claimed, err := w.ClaimWarm(ctx, model.Spec{ID: sb.ID, Size: sb.Size, StorageGB: sb.StorageGB, Lifetime: p.lifetime, ExpiresAt: sb.ExpiresAt}, s.sidecars, record)
	if !claimed || err != nil {
		s.sidecars.Forget(sb.ID) // a claim that failed may have left a client
	}
	if !claimed {
		if recorded { // the claim failed after the write: the cold create writes its own
			s.removeRow(ctx, sb.ID)
		}
		sb.Status, sb.Endpoint = status, endpoint
		return nil, false, nil
	}
	if err != nil {
		s.log.ErrorContext(ctx, "driver warm claim failed", "sandbox", sb.ID, "err", err)
		if recorded {
			s.removeRow(ctx, sb.ID)
		}
		return nil, true, sandboxFailed("create")
	}
	if recErr == nil && !recorded { // a driver that did not call record
		recErr = record(ep)
	}
	if recErr != nil {
		s.Discard(ctx, sb.ID)
		return nil, true, recErr
	}
	if s.d.Hooks != nil {
		s.d.Hooks.Created(ctx, sb) // the storage sync starts
	}
	return sb, true, nil
}

// removeRow deletes the row of a sandbox whose create failed after it was
// written (Discard without the driver's part).
func (s *Service) removeRow(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	if err := s.store.DeleteSandbox(ctx, id); err != nil && !errors.Is(err, model.ErrNotFound) {
		s.log.ErrorContext(ctx, "remove failed sandbox row", "sandbox", id, "err", err)
	}
}
