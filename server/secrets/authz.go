package secrets

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/model"
)

// authorized is the Store a Service keeps (New wraps every store in it):
// it authorizes each call against the caller of the request it serves,
// as server/internal/authz's Store does for model.Store. Kinds, named on
// each method:
//
//   - account: the account id argument must be the caller's;
//   - record: the account of the record written must be the caller's;
//   - system: every account's secrets (rotation at start-up): refused to
//     a caller;
//   - scoped: keyed by a sandbox the handler loaded for the caller, so the
//     check was made there.
//
// The system (no caller: start-up, the egress proxy's own work) reaches
// everything. A refused account check is ErrNotFound, as for another
// account's secret. TestStoreAuthorized fails for a Store method without
// a rule; the compiler for one without a wrapper (inner is not embedded).
type authorized struct{ inner Store }

var _ Store = authorized{}

// CreateSecret: record.
func (s authorized) CreateSecret(ctx context.Context, r *Record, limit int) error {
	if !authz.ActsFor(ctx, r.AccountID) {
		return ErrNotFound
	}
	return s.inner.CreateSecret(ctx, r, limit)
}

// Secrets: account.
func (s authorized) Secrets(ctx context.Context, accountID string) ([]*Record, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.Secrets(ctx, accountID)
}

// UpdateSecret: record.
func (s authorized) UpdateSecret(ctx context.Context, r *Record) error {
	if !authz.ActsFor(ctx, r.AccountID) {
		return ErrNotFound
	}
	return s.inner.UpdateSecret(ctx, r)
}

// DeleteSecret: account.
func (s authorized) DeleteSecret(ctx context.Context, accountID, id string) error {
	if !authz.ActsFor(ctx, accountID) {
		return ErrNotFound
	}
	return s.inner.DeleteSecret(ctx, accountID, id)
}

// AllSecrets: system.
func (s authorized) AllSecrets(ctx context.Context) ([]*Record, error) {
	if !authz.IsSystem(ctx) {
		return nil, authz.ErrSystemOnly
	}
	return s.inner.AllSecrets(ctx)
}

// RewrapSecret: system.
func (s authorized) RewrapSecret(ctx context.Context, id, oldKeyID, keyID string, wrapped []byte) error {
	if !authz.IsSystem(ctx) {
		return authz.ErrSystemOnly
	}
	return s.inner.RewrapSecret(ctx, id, oldKeyID, keyID, wrapped)
}

// TouchSecrets: account.
func (s authorized) TouchSecrets(ctx context.Context, accountID string, names []string, t time.Time) error {
	if !authz.ActsFor(ctx, accountID) {
		return ErrNotFound
	}
	return s.inner.TouchSecrets(ctx, accountID, names, t)
}

// GrantSecrets: scoped.
func (s authorized) GrantSecrets(ctx context.Context, sandboxID string, names []string) error {
	return s.inner.GrantSecrets(ctx, sandboxID, names)
}

// SandboxSecretGrants: scoped.
func (s authorized) SandboxSecretGrants(ctx context.Context, sandboxID string) ([]model.SecretGrant, error) {
	return s.inner.SandboxSecretGrants(ctx, sandboxID)
}

// InheritSecrets: scoped (and the store grants only secrets of the
// sandbox's own account).
func (s authorized) InheritSecrets(ctx context.Context, sandboxID string, grants []model.SecretGrant) error {
	return s.inner.InheritSecrets(ctx, sandboxID, grants)
}

// SandboxSecretNames: scoped.
func (s authorized) SandboxSecretNames(ctx context.Context, sandboxID string) ([]string, error) {
	return s.inner.SandboxSecretNames(ctx, sandboxID)
}
