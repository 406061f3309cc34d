package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

const (
	defaultLimit = 100
	maxLimit     = 500
)

var errOperatorRequired = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeForbidden,
	Message: "the operator role is required",
	Hint:    "the server's operator names operator accounts with boxkite-server --operator EMAIL; the attempt was logged",
}

// operator wraps an operator route: a caller whose account is not an
// operator gets 403; every call, allowed or not, is written to the
// admin access log with its answer's status.
func (s *Service) operator(h httpx.Handler) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx := r.Context()
		c := authz.From(ctx)
		var err error
		if !s.d.IsOperator(c.AccountID()) {
			err = errOperatorRequired
		} else {
			err = h(w, r)
		}
		status := http.StatusOK
		var ae *api.Error
		switch {
		case errors.As(err, &ae):
			status = cmpStatus(ae.Status, api.StatusOf(ae.Code))
		case err != nil:
			status = http.StatusInternalServerError
		}
		s.logAccess(ctx, r, c, status)
		return err
	}
}

func cmpStatus(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// logAccess writes the access log line; a failure is logged, never the
// call's (it already happened).
func (s *Service) logAccess(ctx context.Context, r *http.Request, c *authz.Caller, status int) {
	a := &Access{
		ID: model.NewID(), AccountID: c.AccountID(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Status: status, At: s.d.Now(),
	}
	if c.Account != nil {
		a.Email = c.Account.Email
	}
	if c.Key != nil {
		a.KeyID = c.Key.ID
	}
	if err := s.d.Store.AppendAdminAccess(context.WithoutCancel(ctx), a); err != nil {
		s.d.Log.ErrorContext(ctx, "write admin access log", "err", err, "account", a.AccountID, "path", a.Path)
	}
	s.d.Log.InfoContext(ctx, "admin access", "account", a.AccountID, "method", a.Method, "path", a.Path, "status", status)
}

// page reads ?limit (default 100, at most 500) and ?offset.
func page(r *http.Request) (limit, offset int, err error) {
	if limit, err = httpx.QueryInt(r, "limit", defaultLimit, 1, maxLimit); err != nil {
		return 0, 0, err
	}
	if offset, err = httpx.QueryInt(r, "offset", 0, 0, math.MaxInt32); err != nil {
		return 0, 0, err
	}
	return limit, offset, nil
}

// monthStart is the start of now's calendar month, UTC.
func monthStart(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// metrics serves GET /v1/admin/metrics.
func (s *Service) metrics(w http.ResponseWriter, r *http.Request) error {
	now := s.d.Now()
	u, err := s.d.Store.AdminUsage(r.Context(), monthStart(now), now, api.MaxAdminAccounts)
	if err != nil {
		return fmt.Errorf("read usage: %w", err)
	}
	out := api.AdminMetrics{
		TotalAccounts: u.TotalAccounts, GlobalConcurrentSandboxes: u.GlobalActive,
		GlobalConcurrentSandboxesLimit: s.d.GlobalLimit, TotalMonthlySandboxHoursUsed: u.TotalHours,
		Accounts: make([]api.AdminAccountMetrics, 0, len(u.Accounts)),
	}
	for _, a := range u.Accounts {
		out.Accounts = append(out.Accounts, api.AdminAccountMetrics{
			AccountID: a.AccountID, Email: a.Email, ConcurrentSandboxes: a.Active, MonthlySandboxHoursUsed: a.Hours,
		})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// auditLog serves GET /v1/admin/audit-log.
func (s *Service) auditLog(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	es, err := s.d.Store.AdminAuditLog(r.Context(), r.URL.Query().Get("account_id"), limit, offset)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	out := make([]api.LogEntry, 0, len(es))
	for _, e := range es {
		out = append(out, e.ToAPI())
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// accessLog serves GET /v1/admin/access-log.
func (s *Service) accessLog(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := page(r)
	if err != nil {
		return err
	}
	as, err := s.d.Store.AdminAccessLog(r.Context(), limit, offset)
	if err != nil {
		return fmt.Errorf("read admin access log: %w", err)
	}
	out := make([]api.AdminAccess, 0, len(as))
	for _, a := range as {
		out = append(out, api.AdminAccess{
			ID: a.ID, AccountID: a.AccountID, Email: a.Email, KeyID: a.KeyID, Method: a.Method,
			Path: a.Path, Query: a.Query, Status: a.Status, At: a.At.UTC(),
		})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
