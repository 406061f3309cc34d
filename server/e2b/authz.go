package e2b

import (
	"context"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// authorized is the Store a Handler keeps (New wraps every store in it):
// it authorizes each call against the caller of the request it serves,
// which the control plane records when it authenticates the request
// (ControlPlane.Authenticate, or Session for envd traffic), as
// server/internal/authz's Store does for model.Store. Kinds, named on
// each method:
//
//   - account: the account id argument must be the caller's;
//   - record: the account of the record written must be the caller's;
//   - result: the record found must belong to the caller's account.
//
// The system (no caller yet: envd finding the sandbox a request is for)
// reaches everything. A refusal is ErrNotFound, as for another account's
// sandbox. TestStoreAuthorized fails for a Store method without a rule;
// the compiler for one without a wrapper (inner is not embedded).
type authorized struct{ inner Store }

var _ Store = authorized{}

// PutE2BSandbox: record.
func (s authorized) PutE2BSandbox(ctx context.Context, rec Record) error {
	if !authz.ActsFor(ctx, rec.AccountID) {
		return ErrNotFound
	}
	return s.inner.PutE2BSandbox(ctx, rec)
}

// E2BSandbox: result.
func (s authorized) E2BSandbox(ctx context.Context, sandboxID string) (Record, error) {
	rec, err := s.inner.E2BSandbox(ctx, sandboxID)
	if err == nil && !authz.ActsFor(ctx, rec.AccountID) {
		return Record{}, ErrNotFound
	}
	return rec, err
}

// E2BSandboxes: account.
func (s authorized) E2BSandboxes(ctx context.Context, accountID string) ([]Record, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.E2BSandboxes(ctx, accountID)
}
