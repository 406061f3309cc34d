package server

import (
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/orgs"
)

// newOrgs builds the organizations service when the store keeps
// organizations (the SQL store does; the service authorizes each call by
// membership itself).
func (s *Server) newOrgs() error {
	var st any = s.store
	if w, ok := st.(interface{ Unwrap() model.Store }); ok {
		st = w.Unwrap()
	}
	ost, ok := st.(orgs.Store)
	if !ok {
		return nil
	}
	svc, err := orgs.New(orgs.Deps{
		Store: ost, Log: s.log, Now: func() time.Time { return s.now() },
		Revoked: func(id string) { s.revocations.revoke(id, s.now()) },
		Demoted: func(id string, n int64) { s.revocations.demote(id, n, s.now()) },
		Limits: api.OrganizationQuota{
			MaxConcurrentSandboxes: s.cfg.Limits.AccountConcurrent,
			MonthlySandboxHours:    s.cfg.Limits.MonthlySandboxHours,
		},
	})
	if err != nil {
		return err
	}
	s.orgs = svc
	return nil
}
