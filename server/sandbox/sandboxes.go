package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// CleanupTimeout bounds compensating work (tearing down a half-created
// sandbox) that must finish even when the request that started it is gone.
const CleanupTimeout = time.Minute

// createParams is a validated CreateSandboxRequest.
type createParams struct {
	label        string
	size         string
	storageGB    float64
	lifetime     time.Duration
	count        int
	fromSnapshot string // the driver's key of the snapshot the sandbox starts from (server/snapshot)
	imageID      string // validated image_id and its root filesystem (images_api.go)
	imageRoot    string
	volumes      []model.VolumeMount // validated volume_mounts (volumes.go)
	egress       egress.Allowlist    // granted by mcp_connection_names (mcpconn.go) and egress_hosts
	secrets      []string            // secret_names, checked (server/secrets)
	inherited    []model.SecretGrant // secrets a fork or restore inherits (start.go)
	mountPoints  []string            // of the sandbox a fork or restore comes from (model.Spec)
	autoPause    bool                // paused at expires_at, not destroyed (pause.go)
}

func (s *Service) validateCreate(req api.CreateSandboxRequest) (createParams, error) {
	p := createParams{label: req.Label, size: req.Size, storageGB: req.StorageGB, count: req.Count, autoPause: req.AutoPause}
	maxMin := int(s.cfg.MaxLifetime / time.Minute)
	if err := api.CheckLabel(req.Label); err != nil {
		return p, err
	}
	switch {
	case len(req.Label) > model.MaxLabelLen:
		return p, httpx.Invalid("label", fmt.Sprintf("label is longer than %d characters", model.MaxLabelLen), "")
	case req.Label != "" && req.Count > 1:
		return p, httpx.Invalid("label", "a label names one sandbox, so it cannot go with a count above 1",
			"leave the label out, or create the sandboxes one at a time with labels of their own")
	case req.StorageGB < 0 || math.IsNaN(req.StorageGB):
		return p, httpx.Invalid("storage_gb", "storage_gb must not be negative", "")
	case req.LifetimeMinutes < 0:
		return p, httpx.Invalid("lifetime_minutes", "lifetime_minutes must not be negative", "omit it for the default")
	case req.LifetimeMinutes > maxMin:
		return p, httpx.Invalid("lifetime_minutes", fmt.Sprintf("lifetime_minutes %d exceeds the maximum of %d", req.LifetimeMinutes, maxMin),
			fmt.Sprintf("ask for at most %d minutes and extend the sandbox later", maxMin))
	case req.Count < 0 || req.Count > s.cfg.MaxCount:
		return p, httpx.Invalid("count", fmt.Sprintf("count must be between 1 and %d", s.cfg.MaxCount), "")
	}
	switch req.Size {
	case "":
		p.size = api.SizeSmall
	case api.SizeSmall, api.SizeMedium, api.SizeLarge:
	default:
		return p, httpx.Invalid("size", fmt.Sprintf("size %q is not one of small, medium, large", req.Size), "")
	}
	p.lifetime = s.cfg.DefaultLifetime
	if req.LifetimeMinutes > 0 {
		p.lifetime = time.Duration(req.LifetimeMinutes) * time.Minute
	}
	if p.count == 0 {
		p.count = 1
	}
	return p, nil
}

// createSandbox serves POST /v1/sandboxes. With count > 1 the answer is an array.
func (s *Service) createSandbox(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		api.CreateSandboxRequest
		Count *int `json:"count"` // absent: 1; an explicit 0 is refused
	}
	if err := httpx.DecodeJSON(w, r, &body, httpx.MaxSmallBody); err != nil {
		return err
	}
	req := body.CreateSandboxRequest
	if body.Count != nil {
		if *body.Count < 1 || *body.Count > s.cfg.MaxCount {
			return httpx.Invalid("count", fmt.Sprintf("count must be between 1 and %d, got %d", s.cfg.MaxCount, *body.Count), "omit count for one sandbox")
		}
		req.Count = *body.Count
	}
	p, err := s.validateCreate(req)
	if err != nil {
		return err
	}
	p.imageID = req.ImageID
	if p.imageRoot, err = s.d.ImageRoot(r.Context(), authz.Account(r.Context()).ID, req.ImageID); err != nil {
		return err
	}
	if p.volumes, err = s.d.Volumes.ValidateMounts(r.Context(), authz.Account(r.Context()), req.VolumeMounts); err != nil {
		return err
	}
	if p.egress, err = s.d.Grants(r.Context(), authz.Account(r.Context()), req.MCPConnectionNames); err != nil {
		return err
	}
	hosts, err := egressHosts(authz.From(r.Context()).Key, req.EgressHosts)
	if err != nil {
		return err
	}
	p.egress = append(p.egress, hosts...)
	if err := s.d.Secrets.CheckNames(r.Context(), authz.Account(r.Context()).ID, req.SecretNames); err != nil {
		return err
	}
	p.secrets = req.SecretNames
	if err := s.admitCreate(r.Context(), p.count); err != nil {
		return err
	}
	sbs, err := s.startSandboxes(r.Context(), authz.Account(r.Context()), p)
	if err != nil {
		return err
	}
	if req.Count > 1 {
		out := make([]api.Sandbox, len(sbs))
		for i, sb := range sbs {
			out[i] = sb.ToAPI()
		}
		httpx.WriteJSON(w, http.StatusCreated, out)
		return nil
	}
	httpx.WriteJSON(w, http.StatusCreated, sbs[0].ToAPI())
	return nil
}

// startSandboxes checks the fair-use limits and records p.count
// sandboxes at once (limits.go), then creates them in parallel. It is all
// or nothing: if one fails, the others are torn down and removed.
func (s *Service) startSandboxes(ctx context.Context, acct *model.Account, p createParams) ([]*model.Sandbox, error) {
	if sb, ok, err := s.startPlain(ctx, acct, p); ok {
		if err != nil {
			return nil, err
		}
		s.emit(ctx, sb.AccountID, api.EventSandboxCreated, sandboxEvent(sb))
		return []*model.Sandbox{sb}, nil
	}
	recs := make([]*model.Sandbox, p.count)
	for i := range recs {
		recs[i] = s.newSandboxRecord(acct, p)
	}
	if err := s.reserveSandboxes(ctx, acct, p, recs); err != nil {
		return nil, err
	}
	if err := s.d.Volumes.Attach(ctx, recs, p.volumes); err != nil {
		return nil, err
	}
	sbs := make([]*model.Sandbox, p.count)
	errs := make([]error, p.count)
	var wg sync.WaitGroup
	for i := range p.count {
		wg.Go(func() { sbs[i], errs[i] = s.startSandbox(ctx, recs[i], p) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		for _, sb := range sbs {
			s.emit(ctx, sb.AccountID, api.EventSandboxCreated, sandboxEvent(sb))
		}
		return sbs, nil
	}
	for _, sb := range sbs {
		if sb != nil {
			s.Discard(ctx, sb.ID)
		}
	}
	for _, e := range errs {
		if e != nil {
			return nil, e // the first is as good as any, and keeps an *api.Error intact
		}
	}
	return nil, err
}

// newSandboxRecord returns the row of a sandbox about to be created.
func (s *Service) newSandboxRecord(acct *model.Account, p createParams) *model.Sandbox {
	now := s.now()
	return &model.Sandbox{
		ID:              model.NewID(),
		AccountID:       acct.ID,
		Label:           p.label,
		Size:            p.size,
		StorageGB:       p.storageGB,
		LifetimeMinutes: int(p.lifetime / time.Minute),
		Status:          model.StatusCreating,
		CreatedAt:       now,
		ExpiresAt:       now.Add(p.lifetime),
		Driver:          s.cfg.DriverName,
		AutoPause:       p.autoPause,
	}
}

// startSandbox asks the driver for a sandbox recorded as creating, and
// marks it active with its endpoint. A failure leaves no row behind.
//
// The row is written before Driver.Create so that a crash mid-create
// leaves a trace: Init finds the "creating" row and tears down whatever
// the driver had started.
func (s *Service) startSandbox(ctx context.Context, sb *model.Sandbox, p createParams) (*model.Sandbox, error) {
	// Recorded before the jail exists, so a racing image delete sees the
	// use, and so a restarted server can re-open the sandbox's egress.
	if err := s.recordCreate(ctx, sb, p); err != nil {
		s.log.ErrorContext(ctx, "record sandbox", "sandbox", sb.ID, "err", err)
		s.Discard(ctx, sb.ID)
		if model.IsStorageFault(err) {
			return nil, model.StorageFailed("create the sandbox")
		}
		if ae, ok := errors.AsType[*api.Error](err); ok {
			return nil, ae // the image was deleted since the create resolved it
		}
		return nil, sandboxFailed("create")
	}
	ep, err := s.driver.Create(ctx, s.driverSpec(sb, p))
	if err != nil {
		return nil, s.createFailed(ctx, sb.ID, err)
	}
	return s.activate(ctx, sb.ID, ep)
}

// driverSpec is what the driver is asked to create for sb.
func (s *Service) driverSpec(sb *model.Sandbox, p createParams) model.Spec {
	return model.Spec{
		ID: sb.ID, Size: sb.Size, StorageGB: sb.StorageGB, Lifetime: p.lifetime, ExpiresAt: sb.ExpiresAt,
		Volumes: p.volumes, ImageRoot: p.imageRoot, FromSnapshot: p.fromSnapshot, MountPoints: p.mountPoints,
		Egress: s.egressServer(sb, p.egress),
		Via:    s.sidecars, // the health check's connection serves the first exec
	}
}

// createFailed tears down sandbox id, whose driver create failed with
// err, and returns the answer to give.
func (s *Service) createFailed(ctx context.Context, id string, err error) error {
	s.log.ErrorContext(ctx, "driver create failed", "sandbox", id, "err", err)
	s.Discard(ctx, id)
	if model.IsStorageFault(err) {
		return model.StorageFailed("create the sandbox")
	}
	if he, ok := errors.AsType[*model.HostLimitError](err); ok {
		return he.APIError("create")
	}
	if ae, ok := errors.AsType[*api.Error](err); ok {
		return ae // the driver's own refusal, such as egress it cannot give
	}
	if errors.Is(err, model.ErrCopyElsewhere) {
		return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable,
			"the snapshot's data is not in this server's state directory: another server that does not share it took the snapshot").
			WithHint(copyElsewhereHint(true))
	}
	return sandboxFailed("create")
}

// activate marks sandbox id, which the driver started at ep, active:
// the create's last write before its answer.
func (s *Service) activate(ctx context.Context, id string, ep model.Endpoint) (*model.Sandbox, error) {
	active, err := s.recordActive(ctx, id, ep)
	if err != nil {
		s.Discard(ctx, id)
		return nil, err
	}
	s.created(ctx, active)
	return active, nil
}

// recordActive commits sandbox id's row active with its endpoint.
func (s *Service) recordActive(ctx context.Context, id string, ep model.Endpoint) (*model.Sandbox, error) {
	// The sandbox exists now; record it even if the client has gone away,
	// since the caller tears it down on error anyway.
	active, err := s.store.UpdateSandbox(context.WithoutCancel(ctx), id, func(sb *model.Sandbox) error {
		sb.Status = api.StatusActive
		sb.Endpoint = ep
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record sandbox endpoint: %w", err)
	}
	return active, nil
}

// created tells the hooks that sandbox sb answers and is active.
func (s *Service) created(ctx context.Context, sb *model.Sandbox) {
	if s.d.Hooks != nil {
		s.d.Hooks.Created(ctx, sb) // the storage sync starts
	}
}

// Discard tears a sandbox down and removes its row, as if it never
// existed; used when a create fails part way. Errors are logged: a leftover
// is cleaned up by the next start's reconciliation.
func (s *Service) Discard(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	s.sidecars.Forget(id)
	if err := s.driver.Delete(ctx, id); err != nil {
		s.log.ErrorContext(ctx, "tear down failed sandbox", "sandbox", id, "err", err)
	}
	if err := s.store.DeleteSandbox(ctx, id); err != nil && !errors.Is(err, model.ErrNotFound) {
		s.log.ErrorContext(ctx, "remove failed sandbox row", "sandbox", id, "err", err)
	}
}

// sandboxFailed is the safe answer when the driver or a sidecar failed
// (model.SandboxFailed).
func sandboxFailed(op string) *api.Error { return model.SandboxFailed(op) }

// LoadSandbox returns the caller's sandbox named in the path; another
// account's is not found, never forbidden.
func (s *Service) LoadSandbox(r *http.Request) (*model.Sandbox, error) {
	return s.Find(r.Context(), authz.Account(r.Context()).ID, r.PathValue("id"))
}

// Find returns the account's sandbox id; one of another account, or one
// still being created, is not found (NotFound).
func (s *Service) Find(ctx context.Context, accountID, id string) (*model.Sandbox, error) {
	sb, err := s.store.Sandbox(ctx, accountID, id)
	if errors.Is(err, model.ErrNotFound) || (err == nil && sb.Status == model.StatusCreating) {
		return nil, NotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("load sandbox: %w", err)
	}
	return sb, nil
}

// LoadActive is loadSandbox for an operation on a running sandbox: one
// that is not active is refused (NotActive).
func (s *Service) LoadActive(r *http.Request) (*model.Sandbox, error) {
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return nil, err
	}
	if !sb.Active() {
		return nil, NotActive(sb)
	}
	if s.removing(sb) != "" {
		return nil, DestroyingAnswer(sb.ID)
	}
	return sb, nil
}

// ActiveAudited refuses an audited operation on sb when it is not active
// (NotActive) or while the audit log takes no entries.
func (s *Service) ActiveAudited(sb *model.Sandbox) error {
	if !sb.Active() {
		return NotActive(sb)
	}
	if s.removing(sb) != "" {
		return DestroyingAnswer(sb.ID)
	}
	return s.auditOpen()
}

func NotFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "sandbox %s not found", id).
		WithHint("list your sandboxes with `boxkite session ls`")
}

// NotActive is the answer to an operation on a sandbox that is gone: 410
// sandbox_lost for one that was lost, 409 for one destroyed on purpose.
func NotActive(sb *model.Sandbox) *api.Error {
	switch sb.Status {
	case api.StatusLost:
		return LostAnswer(sb.ID)
	case api.StatusPaused:
		return PausedAnswer(sb)
	}
	return api.Errorf(http.StatusConflict, api.CodeConflict, "sandbox %s is %s", sb.ID, sb.Status).
		WithHint("create a new sandbox with `boxkite session create`")
}

func (s *Service) getSandbox(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	out := s.apiSandbox(sb)
	// What its sidecar last stated to this server, so an operator sees
	// one older than the server (docs/architecture.md, "Sidecar protocol
	// versions"); a list does not say it.
	if v, ok := s.sidecars.Protocol(sb.ID); ok && sb.Active() {
		out.SidecarProtocol = &v
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// extendSandbox serves POST /v1/sandboxes/{id}/extend: expires_at becomes
// now + lifetime_minutes, which may not exceed the configured maximum.
func (s *Service) extendSandbox(w http.ResponseWriter, r *http.Request) error {
	var req api.ExtendSandboxRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	maxMin := int(s.cfg.MaxLifetime / time.Minute)
	if req.LifetimeMinutes < 1 || req.LifetimeMinutes > maxMin {
		return httpx.Invalid("lifetime_minutes", fmt.Sprintf("lifetime_minutes must be between 1 and %d", maxMin),
			fmt.Sprintf("the maximum lifetime is %d minutes from now", maxMin))
	}
	sb, err := s.LoadSandbox(r)
	if err != nil {
		return err
	}
	sb, err = s.store.UpdateSandbox(r.Context(), sb.ID, func(sb *model.Sandbox) error {
		if !sb.Active() {
			return NotActive(sb)
		}
		sb.ExpiresAt = s.now().Add(time.Duration(req.LifetimeMinutes) * time.Minute)
		// lifetime_minutes keeps meaning expires_at - created_at.
		sb.LifetimeMinutes = int(math.Ceil(sb.ExpiresAt.Sub(sb.CreatedAt).Minutes()))
		return nil
	})
	if err != nil {
		return fmt.Errorf("extend sandbox: %w", err)
	}
	s.RecordExpiry(r.Context(), sb)
	httpx.WriteJSON(w, http.StatusOK, sb.ToAPI())
	return nil
}

// RecordExpiry shows sb's expires_at, just changed, on the substrate
// (model.ExpiryRecorder: the kube driver annotates the pod), best effort:
// the row is the truth and the reaper the timer, so a failure is logged,
// not the caller's.
func (s *Service) RecordExpiry(ctx context.Context, sb *model.Sandbox) {
	er, ok := driverAs[model.ExpiryRecorder](s)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	if err := er.RecordExpiry(ctx, sb.ID, sb.ExpiresAt); err != nil {
		s.log.WarnContext(ctx, "record the sandbox's expiry on the substrate", "sandbox", sb.ID, "expires_at", sb.ExpiresAt, "err", err)
	}
}

// sandboxEvent is the data of a sandbox.* event.
func sandboxEvent(sb *model.Sandbox) map[string]any {
	d := map[string]any{"session_id": sb.ID, "label": sb.Label, "status": sb.Status}
	if sb.DestroyedAt != nil {
		d["duration_seconds"] = int64(sb.DestroyedAt.Sub(sb.CreatedAt).Seconds())
		d["reason"] = sb.DestroyReason
	}
	return d
}
