package preview

import (
	"context"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// authorized is the Store a Service keeps (New wraps every store in it):
// it authorizes each call against the caller of the request it serves,
// as server/internal/authz's Store does for model.Store. Kinds, named on
// each method:
//
//   - account: the account id argument must be the caller's;
//   - record: the account of the record written must be the caller's;
//   - open: needs no caller (a preview request presents its token before
//     there is one).
//
// The system (no caller) reaches everything. A refused account check is
// ErrNotFound, as for another account's preview. TestStoreAuthorized
// fails for a Store method without a rule; the compiler for one without a
// wrapper (inner is not embedded).
type authorized struct{ inner Store }

var _ Store = authorized{}

// CreatePreview: record.
func (s authorized) CreatePreview(ctx context.Context, r *Record) error {
	if !authz.ActsFor(ctx, r.AccountID) {
		return ErrNotFound
	}
	return s.inner.CreatePreview(ctx, r)
}

// PreviewByTokenHash: open.
func (s authorized) PreviewByTokenHash(ctx context.Context, hash string) (*Record, error) {
	return s.inner.PreviewByTokenHash(ctx, hash)
}

// Previews: account.
func (s authorized) Previews(ctx context.Context, accountID, sandboxID string) ([]*Record, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.Previews(ctx, accountID, sandboxID)
}

// RevokePreviews: account.
func (s authorized) RevokePreviews(ctx context.Context, accountID, sandboxID string, port int, t time.Time) ([]*Record, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.RevokePreviews(ctx, accountID, sandboxID, port, t)
}
