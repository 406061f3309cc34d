package sandbox

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// startWarm creates a plain sandbox (one, no image, volume, secret, egress
// or snapshot) from the driver's warm pool when it has a member ready
// (model.WarmClaimer), and records it in one write: its row, active with
// the endpoint, inserted by the same reservation that checks the limits.
// A cold create writes twice, a "creating" row before the driver acts and
// the endpoint after, because a jail's start is long and a crash during
// it must leave a trace; a claim takes a few milliseconds and leaves a
// sandbox under its id, so a crash between the claim and the write leaves
// a sandbox no row claims, which Reconcile deletes (what a crash between
// today's two writes left, a "creating" row, ended the same way).
//
// ok false means nothing was done and the caller creates the sandbox as
// usual.
func (s *Service) startWarm(ctx context.Context, acct *model.Account, p createParams) (_ *model.Sandbox, ok bool, _ error) {
	w, isClaimer := s.driver.(model.WarmClaimer)
	if !isClaimer || p.count != 1 || p.imageID != "" || p.imageRoot != "" || p.fromSnapshot != "" ||
		len(p.volumes) > 0 || len(p.egress) > 0 || len(p.secrets) > 0 {
		return nil, false, nil
	}
	// The limits first, from a read, so that a create they refuse does not
	// take a member; the reservation checks them again, atomically.
	now := s.now()
	u, err := s.store.Usage(ctx, acct.ID, limits.MonthStart(now), now)
	if err != nil {
		return nil, false, nil // the usual path reports the store's failure
	}
	if err := s.checkLimits(acct, p, u); err != nil {
		return nil, true, err
	}
	sb := s.newSandboxRecord(acct, p)
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
