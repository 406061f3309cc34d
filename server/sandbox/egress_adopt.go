package sandbox

import (
	"context"
	"fmt"

	"github.com/boxkite/boxkite/server/egress"
	"github.com/boxkite/boxkite/server/model"
)

// recordCreate stores what a restarted server needs to know of a sandbox
// being created: the image it boots from and its egress grants.
func (s *Service) recordCreate(ctx context.Context, sb *model.Sandbox, p createParams) error {
	if p.imageID != "" {
		if err := s.d.UseImage(ctx, p.imageID, sb.ID); err != nil {
			return err
		}
	}
	if err := s.d.Secrets.Grant(ctx, sb.ID, p.secrets); err != nil {
		return fmt.Errorf("record secret grants: %w", err)
	}
	if err := s.d.Secrets.Inherit(ctx, sb.ID, p.inherited); err != nil {
		return fmt.Errorf("record inherited secret grants: %w", err)
	}
	if len(p.egress) == 0 {
		return nil
	}
	grants := make([]string, len(p.egress))
	for i, g := range p.egress {
		grants[i] = g.String()
	}
	if err := s.store.SetSandboxEgress(ctx, sb.ID, grants); err != nil {
		return fmt.Errorf("record egress grants: %w", err)
	}
	return nil
}

// reopenEgress serves the egress socket of an adopted sandbox again: the
// listener died with the previous process, and without this the sandbox
// would lose the egress it was granted.
func (s *Service) reopenEgress(ctx context.Context, sb *model.Sandbox) error {
	grants, err := s.store.SandboxEgress(ctx, sb.ID)
	if err != nil || len(grants) == 0 {
		return err
	}
	d := s.baseDriver()
	r, ok := d.(model.EgressReopener)
	if !ok {
		return fmt.Errorf("driver %T cannot reopen egress", d)
	}
	allow, err := parseGrants(grants)
	if err != nil {
		return err
	}
	return r.ReopenEgress(ctx, sb.ID, s.egressServer(sb, allow))
}

// parseGrants reads egress grants as recorded (recordCreate).
func parseGrants(grants []string) (egress.Allowlist, error) {
	var allow egress.Allowlist
	for _, g := range grants {
		pg, err := egress.ParseGrant(g)
		if err != nil {
			return nil, fmt.Errorf("read egress grants: %w", err)
		}
		allow = append(allow, pg)
	}
	return allow, nil
}
