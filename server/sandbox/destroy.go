package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// deleteSandbox serves DELETE /v1/sandboxes/{id}. Deleting a sandbox that
// is already destroyed or lost is 404, as in the reference.
func (s *Service) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	if !sb.Live() {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "sandbox %s is already %s", sb.ID, sb.Status)
	}
	// Finish the teardown even if the client hangs up half way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), CleanupTimeout)
	defer cancel()
	if err := s.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonDeleted); err != nil {
		if errors.Is(err, ErrNotActive) {
			return api.Errorf(http.StatusNotFound, api.CodeNotFound, "sandbox %s is already destroyed", sb.ID)
		}
		if e := unrecordedDestroy(sb.ID, err); e != nil {
			s.log.ErrorContext(ctx, "record destroyed sandbox", "sandbox", sb.ID, "err", err)
			return e
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// unrecordedDestroy is the answer to a removal the driver carried out but
// the database could not record (it is full, read-only or failing: the
// usual state of a host that ran out of disk, where removing sandboxes is
// how space is freed), else nil. The row stays live until a retry.
func unrecordedDestroy(id string, err error) *api.Error {
	status, code := http.StatusServiceUnavailable, api.CodeServiceUnavailable
	switch {
	case model.IsStorageFault(err):
		status, code = http.StatusInsufficientStorage, api.CodeInsufficientStorage
	case errors.Is(err, model.ErrStoreReadOnly), errors.Is(err, model.ErrStoreIO):
	default:
		return nil
	}
	return api.Errorf(status, code, "sandbox %s was torn down and its storage released, but the removal could not be recorded: %s", id, audit.Reason(err)).
		WithHint("retry the removal once the database takes writes again (the server log has the cause); until then the sandbox is listed as it was")
}

// endedAnswer is the answer to a call to a sandbox that this server
// destroys, recording it as status, while the call runs.
func endedAnswer(id, status string) *api.Error {
	if status == api.StatusLost {
		return LostAnswer(id)
	}
	return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s was %s while the call ran", id, status).
		WithHint("create a new sandbox with `boxkite session create`")
}

// EndedAnswer is why a call to sandbox sb that its sidecar's end cut
// short ended, when the sandbox went with it, worded the same whether its
// destroy still runs or has finished: the answer the destroy gives calls,
// from its mark while it runs (Calls.End) and from the status it recorded
// after (the mark goes once the row says so, and which of the two a
// caller sees is a race); for a paused sandbox the refusal a call gets
// now; nil while it is active, or when it cannot be read.
func (s *Service) EndedAnswer(ctx context.Context, sb *model.Sandbox) *api.Error {
	if e, ok := s.calls.Ending(sb.ID).(*api.Error); ok {
		return e
	}
	now, err := s.store.Sandbox(context.WithoutCancel(ctx), sb.AccountID, sb.ID)
	switch {
	case err != nil || now.Active() || now.Status == model.StatusCreating:
		return nil
	case now.Status == api.StatusPaused:
		return NotActive(now)
	}
	return endedAnswer(now.ID, now.Status)
}

// ErrNotActive aborts a state change on a sandbox that stopped being active
// (or paused) since it was read (a DELETE racing the reaper, say).
var ErrNotActive = errors.New("sandbox is not active")

// Destroy tears the sandbox down and records it as status/reason. The
// driver goes first: if it fails, the row stays active and the caller (or
// the reaper, next tick) can retry. A removal (status destroyed) records
// its intent before the driver starts (markDestroying), so a crash before
// the row is written ends it as destroyed at the next start, not lost.
// Returns ErrNotActive if the row was no longer active.
func (s *Service) Destroy(ctx context.Context, id, status, reason string) error {
	_, err := s.destroySandbox(ctx, id, status, reason)
	return err
}

// destroySandbox is destroy returning the sandbox as recorded.
// Calls in flight to the sandbox, and those that start meanwhile, are
// ended first, so none reads the sidecar's death as a loss.
func (s *Service) destroySandbox(ctx context.Context, id, status, reason string) (*model.Sandbox, error) {
	release, err := s.lockLifecycle(ctx, id) // after a pause or resume under way, on any server
	if err != nil {
		return nil, err
	}
	defer release()
	return s.destroyLocked(ctx, id, status, reason)
}

// destroyLocked is destroySandbox for a caller holding id's lifecycle lock.
func (s *Service) destroyLocked(ctx context.Context, id, status, reason string) (*model.Sandbox, error) {
	s.destroying(ctx, id, status) // the storage sync's final flush, bounded and audited
	// ours: this call wrote the removal's intent.
	ours := false
	if status == api.StatusDestroyed {
		var err error
		if ours, err = s.markDestroying(ctx, id, reason); err != nil {
			return nil, err
		}
	}
	defer s.calls.End(id, endedAnswer(id, status))()
	s.sidecars.Forget(id)
	if err := s.driver.Delete(ctx, id); err != nil {
		s.log.ErrorContext(ctx, "driver delete failed", "sandbox", id, "err", err)
		if status == api.StatusDestroyed {
			s.removals.set(id, reason) // the reaper's next tick retries it
		}
		return nil, sandboxFailed("delete")
	}
	if s.cfg.AfterTeardownForTests != nil {
		s.cfg.AfterTeardownForTests(id)
	}
	// Nothing is left to thaw: calls are answered from the row (and the
	// removals torn down but not recorded), no longer "frozen".
	s.frozen.set(id, false, false, time.Time{})
	sb, err := s.store.UpdateSandbox(context.WithoutCancel(ctx), id, func(sb *model.Sandbox) error {
		if !sb.Live() {
			return ErrNotActive
		}
		now := s.now()
		if sb.PausedAt != nil { // paused time is not counted
			sb.PausedTotal += max(0, now.Sub(*sb.PausedAt))
			sb.PausedAt = nil
		}
		sb.Status, sb.DestroyReason, sb.DestroyedAt = status, reason, &now
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotActive) {
		s.removals.set(id, reason)
		return nil, fmt.Errorf("record destroyed sandbox: %w", err)
	}
	s.removals.set(id, "")
	if err != nil && ours {
		if done := s.finishedElsewhere(ctx, id, reason); done != nil {
			return done, nil // its event was the finisher's to send
		}
	}
	if err == nil {
		event := api.EventSandboxDestroyed
		if status == api.StatusLost {
			event = api.EventSandboxLost
		}
		s.emit(ctx, sb.AccountID, event, sandboxEvent(sb))
	}
	return sb, err
}

// markDestroying records the intent to remove sandbox id (for reason)
// before the driver tears it down, and reports whether this call wrote it
// (false when a removal already under way had). When the database cannot
// take the write (full, read-only, failing: a host out of disk, where
// removing sandboxes is how space is freed) the removal goes on without
// it; this server still answers calls to it as to a removed sandbox and
// records the removal once it can (FinishRemovals), but a crash meanwhile
// leaves it to be found lost at the next start.
func (s *Service) markDestroying(ctx context.Context, id, reason string) (bool, error) {
	wrote := false
	_, err := s.store.UpdateSandbox(context.WithoutCancel(ctx), id, func(sb *model.Sandbox) error {
		if !sb.Live() {
			return ErrNotActive
		}
		wrote = sb.Destroying == ""
		if wrote {
			sb.Destroying = reason
		}
		return nil
	})
	switch {
	case err == nil:
		return wrote, nil
	case errors.Is(err, ErrNotActive), errors.Is(err, model.ErrNotFound):
		return false, err
	case unrecordedDestroy(id, err) != nil:
		s.log.WarnContext(ctx, "record the removal under way; removing the sandbox without it", "sandbox", id, "err", err)
		return false, nil
	}
	return false, fmt.Errorf("record the removal of sandbox %s: %w", id, err)
}

// finishedElsewhere returns sandbox id when the removal this server began
// (its intent written by this server, for reason) was recorded by another
// server meanwhile: one that started while it ran finishes the removals
// under way (finishRemovalsAtStart), this one among them. Its caller
// answers as if it had recorded it itself (a DELETE answers 204, not 404
// "already destroyed"). Nil when the row ended otherwise, or cannot be read.
func (s *Service) finishedElsewhere(ctx context.Context, id, reason string) *model.Sandbox {
	sb, err := s.store.SandboxByID(context.WithoutCancel(ctx), id)
	if err != nil || sb.Status != api.StatusDestroyed || sb.DestroyReason != reason {
		return nil
	}
	s.log.InfoContext(ctx, "removal recorded by another server", "sandbox", id, "reason", reason)
	return sb
}

// removing is the reason of a removal of sb under way or torn down but
// not recorded, "" if none: calls to such a sandbox are refused
// (DestroyingAnswer), and a loss of its sidecar finishes the removal.
func (s *Service) removing(sb *model.Sandbox) string {
	if !sb.Live() {
		return ""
	}
	if sb.Destroying != "" {
		return sb.Destroying
	}
	return s.removals.get(sb.ID)
}

// DestroyingAnswer is the answer to a call to a sandbox being removed.
func DestroyingAnswer(id string) *api.Error {
	return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s is being destroyed", id).
		WithHint("create a new sandbox with `boxkite session create`; if its removal failed, retry `boxkite session rm " + id + "`")
}
