package sandbox

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// startWarm creates the plain sandbox sb (startPlain) from the driver's
// warm pool when it has a member ready (model.WarmClaimer), and records
// it in one write: its row, active with the endpoint, inserted by the
// same reservation that checks the limits. A claim takes a few
// milliseconds and leaves a sandbox under its id, so a crash between the
// claim and the write leaves a sandbox no row claims, which Reconcile
// deletes.
//
// claimed false means nothing was done and the caller creates the
// sandbox cold.
func (s *Service) startWarm(ctx context.Context, acct *model.Account, p createParams, sb *model.Sandbox) (_ *model.Sandbox, claimed bool, _ error) {
	w, isClaimer := s.driver.(model.WarmClaimer)
	if !isClaimer {
		return nil, false, nil
	}
	// The claim goes over the sandbox's own client, whose connection then
	// serves the first exec.
	ep, claimed, err := w.ClaimWarm(ctx, model.Spec{ID: sb.ID, Size: sb.Size, StorageGB: sb.StorageGB, Lifetime: p.lifetime}, s.sidecars)
	if !claimed || err != nil {
		s.sidecars.Forget(sb.ID) // a claim that failed may have left a client
	}
	if !claimed {
		return nil, false, nil
	}
	if err != nil {
		s.log.ErrorContext(ctx, "driver warm claim failed", "sandbox", sb.ID, "err", err)
		return nil, true, sandboxFailed("create")
	}
	sb.Status, sb.Endpoint = api.StatusActive, ep
	// As the store gives rows back (the cold path answers with the row
	// read back): microseconds, UTC.
	sb.CreatedAt, sb.ExpiresAt = time.UnixMicro(sb.CreatedAt.UnixMicro()).UTC(), time.UnixMicro(sb.ExpiresAt.UnixMicro()).UTC()
	// Recorded even if the client has gone away: the sandbox exists now.
	if err := s.reserveSandboxes(context.WithoutCancel(ctx), acct, p, []*model.Sandbox{sb}); err != nil {
		s.Discard(ctx, sb.ID)
		return nil, true, err
	}
	if s.d.Hooks != nil {
		s.d.Hooks.Created(ctx, sb) // the storage sync starts
	}
	return sb, true, nil
}
