package sandbox

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// StartSpec is a create that comes in by another door than POST
// /v1/sandboxes: the E2B facade, a snapshot's restore or a fork.
type StartSpec struct {
	// Request is validated as POST /v1/sandboxes' body is; its image,
	// volumes, connections, egress and secrets are not read.
	Request api.CreateSandboxRequest
	// Lifetime, when set, replaces the request's (not checked against
	// MaxLifetime: the caller has).
	Lifetime     time.Duration
	ImageID      string // resolved with Deps.ImageRoot
	FromSnapshot string // the driver's key of the snapshot the sandboxes start from
	AutoPause    bool
	// Grants are inherited from the sandbox a fork or restore comes from:
	// its secrets (by id) and egress.
	Grants model.Grants
	// MountPoints are model.Spec.MountPoints.
	MountPoints []string
}

// Start creates sandboxes for acct as spec says, all or none, within the
// fair-use limits and once the driver said the host can take them, as
// POST /v1/sandboxes does: every door admits against the same host.
func (s *Service) Start(ctx context.Context, acct *model.Account, spec StartSpec) ([]*model.Sandbox, error) {
	p, err := s.validateCreate(spec.Request)
	if err != nil {
		return nil, err
	}
	if spec.Lifetime > 0 {
		p.lifetime = spec.Lifetime
	}
	p.imageID, p.fromSnapshot, p.autoPause = spec.ImageID, spec.FromSnapshot, spec.AutoPause || p.autoPause
	if p.egress, err = parseGrants(spec.Grants.Egress); err != nil {
		return nil, err
	}
	p.inherited, p.mountPoints = spec.Grants.Secrets, spec.MountPoints
	if p.imageRoot, err = s.d.ImageRoot(ctx, acct.ID, spec.ImageID); err != nil {
		return nil, err
	}
	if err := s.admitCreate(ctx, p.count); err != nil {
		return nil, err
	}
	return s.startSandboxes(ctx, acct, p)
}
