package status

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/limits"
	"github.com/boxkite/boxkite/server/model"
)

// health serves GET /health.
func (s *Service) health(w http.ResponseWriter, _ *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, api.Health{Status: "healthy", Version: s.d.Version})
	return nil
}

// ready serves GET /health/ready.
func (s *Service) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.d.Store.Ping(ctx); err != nil {
		s.d.Log.WarnContext(ctx, "readiness check failed", "err", err)
		return api.Errorf(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "the database is not answering").
			WithHint("check the server log and the --db setting")
	}
	// Not ready for audited work while the audit log cannot be written.
	if err := s.d.AuditOpen(); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, api.Health{Status: "ready", Version: s.d.Version})
	return nil
}

// metrics serves GET /metrics.
func (s *Service) metrics(w http.ResponseWriter, r *http.Request) error {
	s.d.Metrics(w, r)
	return nil
}

// usage serves GET /v1/usage.
func (s *Service) usage(w http.ResponseWriter, r *http.Request) error {
	acct := authz.Account(r.Context())
	now := s.d.Now()
	u, err := s.d.Store.Usage(r.Context(), acct.ID, limits.MonthStart(now), now)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	out := api.Usage{MonthlySandboxHoursUsed: limits.RoundHours(u.MonthlyHours), ConcurrentSandboxes: u.AccountActive}
	// An organization's quota lowers the server's limits (docs/organizations.md).
	conc, hours := acct.TenantLimits(s.d.AccountConcurrent, s.d.MonthlySandboxHours)
	if hours > 0 {
		out.MonthlySandboxHoursLimit = &hours
	}
	if conc > 0 {
		out.ConcurrentSandboxesLimit = &conc
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// host serves GET /v1/host: the host's use of its limits, the audit
// log's state, and the caller's active sandboxes' disks. Admin keys only:
// it describes the machine, not the account.
func (s *Service) host(w http.ResponseWriter, r *http.Request) error {
	if authz.From(r.Context()).Key.Role != model.RoleAdmin {
		return api.Errorf(http.StatusForbidden, api.CodeForbidden, "only admin keys may read the host's status").
			WithHint("use an admin API key")
	}
	out := api.HostStatus{
		Driver: s.d.DriverName, Limits: []api.HostLimit{}, Sandboxes: []api.SandboxDisk{},
		SidecarProtocol: api.SidecarProtocol, OlderSidecars: []api.SandboxSidecar{},
	}
	if since, cause := s.d.AuditState(); cause != nil {
		t := since.UTC()
		out.Audit = api.HostAudit{Reason: audit.Reason(cause), Since: &t}
	} else {
		out.Audit.Writable = true
	}
	sbs, err := s.d.Store.ListSandboxes(r.Context(), authz.Account(r.Context()).ID, true)
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sbs {
		if v, ok := s.d.SidecarProtocol(sb.ID); ok && v < api.SidecarProtocol && sb.Active() {
			out.OlderSidecars = append(out.OlderSidecars, api.SandboxSidecar{ID: sb.ID, Label: sb.Label, SidecarProtocol: v})
		}
	}
	if cd, ok := s.d.Capacity(); ok {
		ids := make([]string, len(sbs))
		labels := map[string]string{}
		for i, sb := range sbs {
			ids[i], labels[sb.ID] = sb.ID, sb.Label
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		hs, err := cd.Capacity(ctx, ids)
		if err != nil {
			return fmt.Errorf("host capacity: %w", err)
		}
		out.Disk = hs.Disk
		if hs.Limits != nil {
			out.Limits = hs.Limits
		}
		if hs.Sandboxes != nil {
			out.Sandboxes = hs.Sandboxes
		}
		for i := range out.Sandboxes {
			out.Sandboxes[i].Label = labels[out.Sandboxes[i].ID]
		}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
