package admin

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// Usage is every account's use of the server.
type Usage struct {
	TotalAccounts int
	GlobalActive  int
	TotalHours    float64
	Accounts      []AccountUsage // busiest first, at most the limit asked
}

// AccountUsage is one account's use.
type AccountUsage struct {
	AccountID, Email string
	Active           int
	Hours            float64
}

// Access is a line of the admin access log.
type Access struct {
	ID, AccountID, Email, KeyID, Method, Path, Query string
	Status                                           int
	At                                               time.Time
}

// Store is what the operator's routes read and write across accounts.
type Store interface {
	// AdminUsage sums sandbox use since (the month's start) until now.
	AdminUsage(ctx context.Context, since, now time.Time, limit int) (Usage, error)
	// AdminAuditLog is a page of the audit log of every account (or of
	// accountID, if not ""), newest first.
	AdminAuditLog(ctx context.Context, accountID string, limit, offset int) ([]*model.ExecLogEntry, error)
	AppendAdminAccess(ctx context.Context, a *Access) error
	// AdminAccessLog is a page of the admin access log, newest first.
	AdminAccessLog(ctx context.Context, limit, offset int) ([]*Access, error)
}

var errOperatorOnly = errors.New("admin: only the server itself or an operator may do this")

// authorized is the Store a Service keeps: every method reads or writes
// across accounts, so it is for the server itself or a caller whose
// account is an operator (isOperator). TestStoreAuthorized checks each.
type authorized struct {
	inner      Store
	isOperator func(accountID string) bool
}

func (s authorized) allowed(ctx context.Context) error {
	if authz.IsSystem(ctx) || s.isOperator(authz.From(ctx).AccountID()) {
		return nil
	}
	return errOperatorOnly
}

func (s authorized) AdminUsage(ctx context.Context, since, now time.Time, limit int) (Usage, error) {
	if err := s.allowed(ctx); err != nil {
		return Usage{}, err
	}
	return s.inner.AdminUsage(ctx, since, now, limit)
}

func (s authorized) AdminAuditLog(ctx context.Context, accountID string, limit, offset int) ([]*model.ExecLogEntry, error) {
	if err := s.allowed(ctx); err != nil {
		return nil, err
	}
	return s.inner.AdminAuditLog(ctx, accountID, limit, offset)
}

// AppendAdminAccess is allowed to anyone: a refused caller's attempt is
// logged too (the Service writes it).
func (s authorized) AppendAdminAccess(ctx context.Context, a *Access) error {
	return s.inner.AppendAdminAccess(ctx, a)
}

func (s authorized) AdminAccessLog(ctx context.Context, limit, offset int) ([]*Access, error) {
	if err := s.allowed(ctx); err != nil {
		return nil, err
	}
	return s.inner.AdminAccessLog(ctx, limit, offset)
}
