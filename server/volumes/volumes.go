package volumes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// MountRoot is where volumes may be mounted in a sandbox: strictly
// below /workspace, so the sidecar's file API (whose writable root is
// /workspace) reaches them without a new typed root.
const MountRoot = "/workspace"

// volumeDriver returns the driver's volume side.
func (s *Service) volumeDriver() (model.VolumeDriver, error) {
	vd, ok := s.d.Driver.(model.VolumeDriver)
	if !ok {
		return nil, api.Errorf(http.StatusUnprocessableEntity, api.CodeNotSupported, "this server's driver has no volumes")
	}
	return vd, nil
}

// createVolume serves POST /v1/volumes.
func (s *Service) createVolume(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		api.CreateVolumeRequest
		SizeGB *float64 `json:"size_gb"` // absent: 1; an explicit 0 is refused
	}
	if err := httpx.DecodeJSON(w, r, &body, httpx.MaxSmallBody); err != nil {
		return err
	}
	req := body.CreateVolumeRequest
	if len(req.Label) > model.MaxLabelLen {
		return httpx.Invalid("label", fmt.Sprintf("label is longer than %d characters", model.MaxLabelLen), "")
	}
	req.SizeGB = 1
	if body.SizeGB != nil {
		req.SizeGB = *body.SizeGB
	}
	if maxGB := s.d.MaxGB; req.SizeGB <= 0 || req.SizeGB > maxGB || math.IsNaN(req.SizeGB) {
		return httpx.Invalid("size_gb", fmt.Sprintf("size_gb must be more than 0 and at most %g, got %g", maxGB, req.SizeGB),
			"omit size_gb for the default of 1 GB")
	}
	vd, err := s.volumeDriver()
	if err != nil {
		return err
	}
	if err := model.HostRefusal(s.d.AdmitWrite(r.Context(), ""), "volume create"); err != nil {
		return err
	}
	acct := authz.Account(r.Context())
	s.creating.Lock()
	defer s.creating.Unlock()
	if err := s.checkLimit(r.Context(), acct.ID); err != nil {
		return err
	}
	v := &model.Volume{ID: model.NewID(), AccountID: acct.ID, Label: req.Label, SizeGB: req.SizeGB, Status: api.VolumeReady, CreatedAt: s.d.Now()}
	const mib = 1 << 20
	size := max(16*mib, int64(req.SizeGB*(1<<30))/mib*mib)
	if err := vd.CreateVolume(r.Context(), v.ID, size); err != nil {
		s.d.Log.ErrorContext(r.Context(), "create volume", "volume", v.ID, "err", err)
		if model.IsStorageFault(err) {
			return model.StorageFailed("create the volume")
		}
		if he, ok := errors.AsType[*model.HostLimitError](err); ok {
			return he.APIError("volume create") // a Kubernetes ResourceQuota
		}
		return api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed, "could not create the volume").
			WithHint("retry; if it keeps failing, the server log has the cause under this request id")
	}
	if err := s.d.Store.CreateVolume(r.Context(), v); err != nil {
		_ = vd.DeleteVolume(context.WithoutCancel(r.Context()), v.ID)
		return fmt.Errorf("record volume: %w", err)
	}
	httpx.WriteJSON(w, http.StatusCreated, v.ToAPI())
	return nil
}

// checkLimit refuses an account's volume beyond the limit: each holds a
// host loop device and mount from create to delete.
func (s *Service) checkLimit(ctx context.Context, account string) error {
	if s.d.Limit < 0 {
		return nil
	}
	vs, err := s.d.Store.ListVolumes(ctx, account)
	if err != nil {
		return fmt.Errorf("count volumes: %w", err)
	}
	if len(vs) < s.d.Limit {
		return nil
	}
	return &api.Error{
		Status: http.StatusTooManyRequests, Code: api.CodeVolumeLimitReached,
		Message: fmt.Sprintf("the account holds %d volumes, the most it may keep", len(vs)),
		Hint:    "delete one with `boxkite volumes rm ID` (`boxkite volumes ls` lists them)",
		Details: map[string]any{"limit": s.d.Limit, "count": len(vs)},
	}
}

func (s *Service) listVolumes(w http.ResponseWriter, r *http.Request) error {
	vs, err := s.d.Store.ListVolumes(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	out := make([]api.Volume, len(vs))
	for i, v := range vs {
		out[i] = v.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func volumeNotFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "volume %s not found", id).
		WithHint("list your volumes with `boxkite volumes ls`")
}

func (s *Service) getVolume(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	v, err := s.d.Store.Volume(r.Context(), authz.Account(r.Context()).ID, id)
	if errors.Is(err, model.ErrNotFound) {
		return volumeNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("load volume: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, v.ToAPI())
	return nil
}

// deleteVolume serves DELETE /v1/volumes/{id}: the record goes first
// (refused while a live sandbox mounts it), then the data.
func (s *Service) deleteVolume(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := s.d.Store.DeleteVolume(r.Context(), authz.Account(r.Context()).ID, id)
	switch {
	case errors.Is(err, model.ErrNotFound):
		return volumeNotFound(id)
	case errors.Is(err, model.ErrConflict):
		return volumeInUse(id, err)
	case err != nil:
		return fmt.Errorf("delete volume: %w", err)
	}
	if vd, err := s.volumeDriver(); err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.d.CleanupTimeout)
		defer cancel()
		if err := vd.DeleteVolume(ctx, id); err != nil {
			// The record is gone; the data is an orphan the log names.
			s.d.Log.ErrorContext(ctx, "delete volume data", "volume", id, "err", err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// volumeInUse is the refusal to delete a mounted volume; its hint names
// the sandboxes that mount it, paused ones too (the store keeps a paused
// sandbox's status column 'active').
func volumeInUse(id string, err error) *api.Error {
	hint := "delete the sandboxes that mount it first"
	var inUse *model.VolumeInUseError
	if errors.As(err, &inUse) && len(inUse.SandboxIDs) > 0 {
		ids := inUse.SandboxIDs
		const most = 5
		more := ""
		if len(ids) > most {
			more = fmt.Sprintf(" and %d more", len(ids)-most)
			ids = ids[:most]
		}
		hint = fmt.Sprintf("delete the sandboxes that mount it first: %s%s", strings.Join(ids, ", "), more)
	}
	return api.Errorf(http.StatusConflict, api.CodeVolumeInUse, "volume %s is mounted by an active sandbox", id).WithHint(hint)
}

// ValidateMounts checks a create's volume_mounts: each path strictly
// below MountRoot, clean, and not overlapping another (422); each
// volume the caller's and ready (404). It returns the mounts sorted by path.
func (s *Service) ValidateMounts(ctx context.Context, acct *model.Account, mounts map[string]string) ([]model.VolumeMount, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	if _, err := s.volumeDriver(); err != nil {
		return nil, err
	}
	out := make([]model.VolumeMount, 0, len(mounts))
	for id, p := range mounts {
		if !path.IsAbs(p) || path.Clean(p) != p || !strings.HasPrefix(p, MountRoot+"/") {
			return nil, httpx.Invalid("volume_mounts", fmt.Sprintf("mount path %q must be a clean absolute path below %s/", p, MountRoot),
				"mount volumes at e.g. /workspace/data")
		}
		out = append(out, model.VolumeMount{ID: id, Path: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	for i := 1; i < len(out); i++ {
		if prev := out[i-1].Path; out[i].Path == prev || strings.HasPrefix(out[i].Path, prev+"/") {
			return nil, httpx.Invalid("volume_mounts", fmt.Sprintf("mount paths %s and %s overlap", prev, out[i].Path), "")
		}
	}
	for _, m := range out {
		v, err := s.d.Store.Volume(ctx, acct.ID, m.ID)
		if errors.Is(err, model.ErrNotFound) || (err == nil && v.Status != api.VolumeReady) {
			return nil, volumeNotFound(m.ID)
		}
		if err != nil {
			return nil, fmt.Errorf("load volume: %w", err)
		}
	}
	return out, nil
}

// Attach records the mounts of freshly reserved sandboxes, before
// the driver mounts anything, so a volume is never deleted under a
// sandbox; on failure the reserved rows are removed.
func (s *Service) Attach(ctx context.Context, recs []*model.Sandbox, mounts []model.VolumeMount) error {
	if len(mounts) == 0 {
		return nil
	}
	ids := make([]string, len(mounts))
	for i, m := range mounts {
		ids[i] = m.ID
	}
	for _, sb := range recs {
		if err := s.d.Store.AttachVolumes(ctx, sb.ID, ids); err != nil {
			for _, sb := range recs {
				s.d.Discard(ctx, sb.ID)
			}
			return fmt.Errorf("attach volumes: %w", err)
		}
	}
	return nil
}
