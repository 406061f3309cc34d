package sandbox

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Removals recorded in two steps (destroy.go): the intent (the row's
// Destroying) before the driver tears a sandbox down, then the row
// destroyed. A crash in between leaves the intent, which the next start
// finishes (Reconcile); a database that could not take the second write
// (full, read-only) leaves the sandbox in removals, whose calls are
// refused as being destroyed and which the reaper's next tick records
// once the database takes writes again. A teardown the driver failed is
// retried on each tick the same way.

// removals are sandboxes whose removal began but did not end: the
// driver's teardown failed, or the database could not record it; id →
// reason.
type removals struct {
	mu  sync.Mutex
	ids map[string]string
}

func (r *removals) get(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

// set records id's removal (reason), or forgets it ("").
func (r *removals) set(id, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason == "" {
		delete(r.ids, id)
		return
	}
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	r.ids[id] = reason
}

func (r *removals) all() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ids)
}

// FinishRemovals retries the removals this server began but could not
// finish: the driver's teardown failed, or its record (the reaper's tick
// calls it).
func (s *Service) FinishRemovals(ctx context.Context) {
	for id, reason := range s.removals.all() {
		s.finishRemoval(ctx, id, reason)
	}
}

// finishRemoval ends the removal of sandbox id begun for reason: the
// driver's teardown again (whatever of it is left: nothing, or a part a
// crash cut short), then the row destroyed, with the sandbox.destroyed
// event a removal gives.
func (s *Service) finishRemoval(ctx context.Context, id, reason string) {
	ctx, cancel := context.WithTimeout(ctx, CleanupTimeout)
	defer cancel()
	err := s.Destroy(ctx, id, api.StatusDestroyed, reason)
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "removal under way finished", "sandbox", id, "reason", reason)
	case errors.Is(err, ErrNotActive), errors.Is(err, model.ErrNotFound):
		s.removals.set(id, "")
	default:
		s.log.ErrorContext(ctx, "finish the removal under way", "sandbox", id, "err", err)
	}
}

// finishRemovalsAtStart finishes, at start, the removals of sbs under
// way when the server stopped, and returns the other sandboxes.
func (s *Service) finishRemovalsAtStart(ctx context.Context, sbs []*model.Sandbox) []*model.Sandbox {
	var rest, removing []*model.Sandbox
	for _, sb := range sbs {
		if sb.Destroying != "" {
			removing = append(removing, sb)
		} else {
			rest = append(rest, sb)
		}
	}
	s.each(removing, func(sb *model.Sandbox) {
		s.log.WarnContext(ctx, "finishing the removal under way when the server stopped", "sandbox", sb.ID, "reason", sb.Destroying)
		s.finishRemoval(ctx, sb.ID, sb.Destroying)
	})
	return rest
}
