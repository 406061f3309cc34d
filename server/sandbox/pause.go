package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// Pause and resume (issue 22). A paused sandbox keeps its id, endpoint
// and files; its lifetime and monthly hours stop counting and it holds no
// concurrency slot until resumed. The row is marked paused before the
// driver pauses and marked active only after the driver resumed, so a
// crash in between leaves a paused row, and reconcile pauses the sandbox
// again (pauseAgain) instead of losing a frozen one that does not answer.

// PausedAnswer is the answer to an operation on a paused sandbox.
func PausedAnswer(sb *model.Sandbox) *api.Error {
	e := api.Errorf(http.StatusConflict, api.CodeSandboxPaused, "sandbox %s is paused (%s)", sb.ID, sb.PausedWith).
		WithHint("resume it first: `boxkite session resume " + sb.ID + "`")
	e.Details = map[string]any{"paused_with": sb.PausedWith}
	return e
}

// pauseSandbox serves POST /v1/sandboxes/{id}/pause.
func (s *Service) pauseSandbox(w http.ResponseWriter, r *http.Request) error {
	var req api.PauseSandboxRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	sb, err = s.Pause(r.Context(), sb, req.Mode)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, sb.ToAPI())
	return nil
}

// Pause pauses sb in mode ("" is api.PauseFreeze) and returns it as recorded.
func (s *Service) Pause(ctx context.Context, sb *model.Sandbox, mode string) (*model.Sandbox, error) {
	if mode == "" {
		mode = api.PauseFreeze
	}
	switch mode {
	case api.PauseFreeze, api.PauseFilesystem, api.PauseCheckpoint:
	default:
		return nil, httpx.Invalid("mode", fmt.Sprintf("mode %q is not one of freeze, filesystem, checkpoint", mode), "omit it for freeze")
	}
	release, err := s.lockLifecycle(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	sb, err = s.reload(ctx, sb)
	if err != nil {
		return nil, err
	}
	if s.removing(sb) != "" {
		return nil, DestroyingAnswer(sb.ID)
	}
	if sb.Status == api.StatusPaused {
		if sb.PausedWith == mode {
			return sb, nil
		}
		return nil, PausedAnswer(sb)
	}
	if !sb.Active() {
		return nil, NotActive(sb)
	}
	p, err := s.pauseDriver(mode)
	if err != nil {
		return nil, err
	}
	if err := s.checkPausedLimit(ctx, sb.AccountID); err != nil {
		return nil, err
	}
	// Finish even if the client hangs up: the row must end up telling
	// the truth.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	var running []api.ProcessInfo
	if mode == api.PauseFilesystem {
		if running, err = s.runningProcesses(ctx, sb); err != nil {
			// The files matter more than the processes: pause anyway,
			// with none to restart.
			s.log.WarnContext(ctx, "list processes before a filesystem pause; none will be restarted", "sandbox", sb.ID, "err", err)
		}
	}
	now := s.now()
	paused, err := s.store.UpdateSandbox(ctx, sb.ID, func(sb *model.Sandbox) error {
		if !sb.Active() {
			return NotActive(sb)
		}
		sb.Status, sb.PausedWith, sb.PausedAt, sb.PausedProcesses = api.StatusPaused, mode, &now, running
		return nil
	})
	if err != nil {
		return nil, s.storeAnswer(err, "pause the sandbox")
	}
	// Calls in flight would wait on a stopped sidecar: end them.
	s.calls.Cancel(sb.ID, PausedAnswer(paused))
	if mode != api.PauseFreeze {
		s.sidecars.Forget(sb.ID)
	}
	if err := p.Pause(ctx, sb.ID, mode); err != nil {
		s.log.ErrorContext(ctx, "driver pause failed", "sandbox", sb.ID, "mode", mode, "err", err)
		s.undoPause(ctx, sb.ID)
		if ae, ok := errors.AsType[*api.Error](err); ok {
			return nil, ae // the driver's own refusal, such as kube's of a sandbox granted egress
		}
		return nil, sandboxFailed("pause")
	}
	s.emit(ctx, paused.AccountID, api.EventSandboxPaused, sandboxEvent(paused))
	detail := map[string]any{"mode": mode}
	if mode == api.PauseFilesystem {
		detail["processes_ended"] = len(running)
	}
	_ = s.audit(ctx, audit.Record{ // a failure waits in the audit gate
		Sandbox: paused, Source: api.LogSourceSystem, Operation: "sandbox_paused",
		Detail: detail, Started: now,
	})
	return paused, nil
}

// pauseDriver returns the driver as a PauseDriver, or why it cannot pause
// in mode.
func (s *Service) pauseDriver(mode string) (model.PauseDriver, error) {
	p, ok := driverAs[model.PauseDriver](s)
	if !ok {
		return nil, httpx.NotSupported("mode", "this server's driver cannot pause sandboxes")
	}
	modes := p.PauseModes()
	if why := modes[mode]; why != "" {
		return nil, api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported, "pause mode %s does not work on this server: %s", mode, why).
			WithHint(pauseModeHint(modes))
	}
	return p, nil
}

// undoPause records sandbox id active again after the driver failed to
// pause it, unless it has ended meanwhile.
func (s *Service) undoPause(ctx context.Context, id string) {
	if _, uerr := s.store.UpdateSandbox(ctx, id, func(sb *model.Sandbox) error {
		if sb.Status != api.StatusPaused {
			return ErrNotActive
		}
		sb.Status, sb.PausedWith, sb.PausedAt = api.StatusActive, "", nil
		return nil
	}); uerr != nil && !errors.Is(uerr, ErrNotActive) {
		s.log.ErrorContext(ctx, "record failed pause", "sandbox", id, "err", uerr)
	}
}

// runningProcesses asks the sandbox's sidecar for its background
// processes that are running.
func (s *Service) runningProcesses(ctx context.Context, sb *model.Sandbox) ([]api.ProcessInfo, error) {
	var list api.ProcessList
	if err := s.sidecarJSON(ctx, sb, http.MethodGet, "/process", nil, &list); err != nil {
		return nil, err
	}
	var running []api.ProcessInfo
	for _, p := range list.Processes {
		if p.Status == api.ProcessRunning {
			running = append(running, p)
		}
	}
	return running, nil
}

// restartProcesses starts again, in a sandbox resumed from a filesystem
// Pause, the processes that ran at the pause with restart set, and
// reports the others as ended.
func (s *Service) restartProcesses(ctx context.Context, sb *model.Sandbox, procs []api.ProcessInfo) []api.ResumedProcess {
	out := make([]api.ResumedProcess, 0, len(procs))
	for _, p := range procs {
		r := api.ResumedProcess{ProcessID: p.ProcessID, Command: p.Command, Status: api.ProcessEnded}
		if p.Restart {
			req := api.ProcessStartRequest{Command: p.Command, Description: p.Description, MaxRuntimeSeconds: p.MaxRuntimeSeconds, Restart: true}
			var started api.ProcessStarted
			if err := s.sidecarJSON(ctx, sb, http.MethodPost, "/process/start", req, &started); err != nil {
				s.log.WarnContext(ctx, "restart process after a filesystem pause", "sandbox", sb.ID, "process", p.ProcessID, "err", err)
				r.Error = "could not start it again"
			} else {
				r.Status, r.NewProcessID = api.ProcessRestarted, started.ProcessID
			}
		}
		out = append(out, r)
	}
	return out
}

// sidecarJSON sends in (nil: no body) to the sandbox's sidecar and
// decodes its 2xx answer into out.
func (s *Service) sidecarJSON(ctx context.Context, sb *model.Sandbox, method, path string, in, out any) error {
	client, err := s.sidecars.Client(sb.ID, sb.Endpoint)
	if err != nil {
		return err
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sidecar"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set(api.HeaderSidecarToken, sb.Endpoint.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("sidecar %s %s: %s: %s", method, path, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// resumeSandbox serves POST /v1/sandboxes/{id}/resume.
func (s *Service) resumeSandbox(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	sb, procs, err := s.Resume(r.Context(), authz.Account(r.Context()), sb)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, api.ResumeResult{Sandbox: sb.ToAPI(), Processes: procs})
	return nil
}

// Resume runs a paused sb again and returns it as recorded (its expiry
// moves on by the time it was paused) and, after a filesystem pause, what
// became of its background processes. Resuming an active sandbox returns
// it as it is.
func (s *Service) Resume(ctx context.Context, acct *model.Account, sb *model.Sandbox) (*model.Sandbox, []api.ResumedProcess, error) {
	// One at a time with pause, resume and destroy, on any server: a
	// second resume finds it active, a delete that went first finds it
	// gone.
	release, err := s.lockLifecycle(ctx, sb.ID)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	sb, err = s.reload(ctx, sb)
	if err != nil {
		return nil, nil, err
	}
	if s.removing(sb) != "" {
		return nil, nil, DestroyingAnswer(sb.ID)
	}
	if sb.Active() {
		return sb, nil, nil
	}
	if sb.Status != api.StatusPaused {
		return nil, nil, NotActive(sb)
	}
	p, ok := driverAs[model.PauseDriver](s)
	if !ok {
		return nil, nil, httpx.NotSupported("mode", "this server's driver cannot resume sandboxes")
	}
	if err := s.admitResume(ctx, acct); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	egress, err := s.sandboxEgress(ctx, sb)
	if err != nil {
		return nil, nil, err
	}
	if err := p.Resume(ctx, sb.ID, egress); err != nil {
		if now := s.resumedElsewhere(ctx, sb); now != nil {
			return now, nil, nil
		}
		s.log.ErrorContext(ctx, "driver resume failed", "sandbox", sb.ID, "mode", sb.PausedWith, "err", err)
		if errors.Is(err, model.ErrSandboxGone) {
			return nil, nil, s.loseGoneLocked(ctx, sb)
		}
		if errors.Is(err, model.ErrCopyElsewhere) {
			return nil, nil, api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable,
				"sandbox %s was paused through another server, which keeps its workspace in a state directory this one does not share", sb.ID).
				WithHint(copyElsewhereHint(false))
		}
		return nil, nil, sandboxFailed("resume")
	}
	ep, err := s.resumedEndpoint(ctx, sb)
	if err != nil {
		return nil, nil, err
	}
	sb.Endpoint = ep
	procs := s.restartProcesses(ctx, sb, sb.PausedProcesses)
	now := s.now()
	var mode string
	resumed, err := s.store.UpdateSandbox(ctx, sb.ID, func(sb *model.Sandbox) error {
		if sb.Status != api.StatusPaused {
			return NotActive(sb)
		}
		mode = sb.PausedWith
		paused := max(0, now.Sub(*sb.PausedAt))
		sb.ExpiresAt = sb.ExpiresAt.Add(paused)
		if !sb.ExpiresAt.After(now) { // auto-paused at its end: a fresh lifetime
			sb.ExpiresAt = now.Add(s.cfg.DefaultLifetime)
			sb.LifetimeMinutes = int(math.Ceil(sb.ExpiresAt.Sub(sb.CreatedAt).Minutes()))
		}
		sb.PausedTotal += paused
		sb.Status, sb.PausedWith, sb.PausedAt, sb.PausedProcesses = api.StatusActive, "", nil, nil
		sb.Endpoint = ep
		return nil
	})
	if err != nil {
		return nil, nil, s.storeAnswer(err, "resume the sandbox")
	}
	s.RecordExpiry(ctx, resumed) // moved on by the pause, and a resumed pod is new
	s.emit(ctx, resumed.AccountID, api.EventSandboxResumed, sandboxEvent(resumed))
	detail := map[string]any{"mode": mode}
	if len(procs) > 0 {
		detail["processes"] = procs
	}
	_ = s.audit(ctx, audit.Record{
		Sandbox: resumed, Source: api.LogSourceSystem, Operation: "sandbox_resumed",
		Detail: detail, Started: now,
	})
	return resumed, procs, nil
}

// resumedElsewhere returns sb as recorded now when another server sharing
// the database resumed it while this one's driver call failed (the
// lifecycle lock is per server: on kube, the later of two resumes finds
// the workspace copy the first deleted), to be answered as a resume of an
// active sandbox is; nil otherwise.
func (s *Service) resumedElsewhere(ctx context.Context, sb *model.Sandbox) *model.Sandbox {
	now, err := s.reload(ctx, sb)
	if err != nil || !now.Active() {
		return nil
	}
	s.log.InfoContext(ctx, "sandbox resumed by another server meanwhile", "sandbox", sb.ID)
	return now
}

// resumedEndpoint is how sb's sidecar is reached after a resume: where
// the driver reports it now (model.EndpointDriver), with the token the
// server holds; else where it was.
func (s *Service) resumedEndpoint(ctx context.Context, sb *model.Sandbox) (model.Endpoint, error) {
	d := s.baseDriver()
	ed, ok := d.(model.EndpointDriver)
	if !ok {
		return sb.Endpoint, nil
	}
	ep, err := ed.Endpoint(ctx, sb.ID)
	if err != nil {
		s.log.ErrorContext(ctx, "endpoint of a resumed sandbox", "sandbox", sb.ID, "err", err)
		return model.Endpoint{}, sandboxFailed("resume")
	}
	ep.Token = sb.Endpoint.Token
	s.sidecars.Forget(sb.ID)
	return ep, nil
}

// reload reads sb's row again (after a lifecycle lock was taken).
func (s *Service) reload(ctx context.Context, sb *model.Sandbox) (*model.Sandbox, error) {
	fresh, err := s.store.Sandbox(ctx, sb.AccountID, sb.ID)
	if errors.Is(err, model.ErrNotFound) {
		return nil, NotFound(sb.ID)
	}
	if err != nil {
		return nil, s.storeAnswer(err, "load the sandbox")
	}
	return fresh, nil
}

// checkPausedLimit refuses a pause when the account keeps PausedLimit
// paused sandboxes already (429 limit_exceeded). Pauses of one account
// racing on several servers may overshoot it by their number.
func (s *Service) checkPausedLimit(ctx context.Context, accountID string) error {
	limit := s.cfg.PausedLimit
	if limit < 0 {
		return nil
	}
	sbs, err := s.store.ListSandboxes(ctx, accountID, true)
	if err != nil {
		return s.storeAnswer(err, "count paused sandboxes")
	}
	n := 0
	for _, sb := range sbs {
		if sb.Status == api.StatusPaused {
			n++
		}
	}
	if n < limit {
		return nil
	}
	return limits.LimitError(api.CodeLimitExceeded,
		fmt.Sprintf("%d of your sandboxes are paused, the most an account may keep", n),
		"resume one (`boxkite session resume`) or remove one (`boxkite session rm`)",
		map[string]any{"limit": limit, "paused": n})
}

// admitResume checks that the account may run one more sandbox. It is
// checked outside the store's critical section: two resumes racing for
// the last slot may both pass.
func (s *Service) admitResume(ctx context.Context, acct *model.Account) error {
	now := s.now()
	u, err := s.store.Usage(ctx, acct.ID, s.hoursSince(acct, now), now)
	if err != nil {
		return fmt.Errorf("read usage: %w", err)
	}
	return s.checkLimits(acct, createParams{size: api.SizeSmall, count: 1}, u)
}

// sandboxEgress is the egress server of sb as granted at create, or nil.
func (s *Service) sandboxEgress(ctx context.Context, sb *model.Sandbox) (func(net.Listener), error) {
	grants, err := s.store.SandboxEgress(ctx, sb.ID)
	if err != nil || len(grants) == 0 {
		return nil, err
	}
	allow, err := parseGrants(grants)
	if err != nil {
		return nil, err
	}
	return s.egressServer(sb, allow), nil
}

// storeAnswer passes an *api.Error through and wraps anything else.
func (s *Service) storeAnswer(err error, op string) error {
	if _, ok := errors.AsType[*api.Error](err); ok {
		return err
	}
	if model.IsStorageFault(err) {
		return model.StorageFailed(op)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// reconcilePaused makes the driver agree with the paused rows (a crash
// may have come between a row and the driver) and returns their ids. A
// sandbox the driver cannot pause again is left paused on record: resume
// says what is wrong.
func (s *Service) reconcilePaused(ctx context.Context) ([]string, error) {
	paused, err := s.store.SandboxesWithStatus(ctx, api.StatusPaused)
	if err != nil {
		return nil, fmt.Errorf("list paused sandboxes: %w", err)
	}
	paused = s.finishRemovalsAtStart(ctx, paused)
	p, ok := driverAs[model.PauseDriver](s)
	ids := make([]string, len(paused))
	s.each(paused, func(sb *model.Sandbox) {
		if !ok {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := p.Pause(pctx, sb.ID, sb.PausedWith)
		if errors.Is(err, model.ErrSandboxGone) {
			s.loseGonePaused(ctx, sb)
			return
		}
		if err != nil {
			s.log.ErrorContext(ctx, "pause sandbox again", "sandbox", sb.ID, "mode", sb.PausedWith, "err", err)
		}
	})
	for i, sb := range paused {
		ids[i] = sb.ID
	}
	return ids, nil
}

// autoPause pauses a sandbox created with auto_pause whose lifetime ended
// (the reaper): with filesystem where the driver can, which releases its
// memory, else freeze; a sandbox that cannot be paused is destroyed.
func (s *Service) autoPause(ctx context.Context, sb *model.Sandbox) {
	mode := api.PauseFreeze
	if p, ok := driverAs[model.PauseDriver](s); ok && p.PauseModes()[api.PauseFilesystem] == "" {
		mode = api.PauseFilesystem
	}
	if _, err := s.Pause(ctx, sb, mode); err != nil {
		s.log.WarnContext(ctx, "auto-pause failed; destroying the sandbox", "sandbox", sb.ID, "err", err)
		if err := s.Destroy(ctx, sb.ID, api.StatusDestroyed, model.ReasonExpired); err != nil && !errors.Is(err, ErrNotActive) {
			s.log.ErrorContext(ctx, "destroy a sandbox that could not be auto-paused", "sandbox", sb.ID, "err", err)
		}
		return
	}
	s.log.InfoContext(ctx, "sandbox auto-paused at the end of its lifetime", "sandbox", sb.ID, "mode", mode)
}
