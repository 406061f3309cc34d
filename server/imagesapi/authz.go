package imagesapi

import (
	"context"
	"io"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
)

// errNotFound is the refusal of another account's image: the image
// store's own answer for an image that does not exist.
var errNotFound = api.Errorf(http.StatusNotFound, api.CodeNotFound, "image not found")

// authorized is the Store a Service keeps (New wraps the image store in
// it): it authorizes each call against the caller of the request it
// serves, as server/internal/authz's Store does for model.Store. Kinds,
// named on each method:
//
//   - account: the account id argument must be the caller's;
//   - scoped: keyed by an image the same request resolved for the caller
//     first (Use follows RootFS in a create).
//
// The system (no caller) reaches everything. A refused account check is
// errNotFound, as for an image that does not exist. TestStoreAuthorized
// fails for a Store method without a rule; the compiler for one without a
// wrapper (inner is not embedded).
type authorized struct{ inner Store }

var _ Store = authorized{}

// Import: account.
func (s authorized) Import(ctx context.Context, account, label string, body io.Reader) (api.Image, error) {
	if !authz.ActsFor(ctx, account) {
		return api.Image{}, errNotFound
	}
	return s.inner.Import(ctx, account, label, body)
}

// Build: account.
func (s authorized) Build(ctx context.Context, account, label string, spec api.ImageSpec, audit func(imageID, operation string, detail map[string]any)) (api.Image, bool, error) {
	if !authz.ActsFor(ctx, account) {
		return api.Image{}, false, errNotFound
	}
	return s.inner.Build(ctx, account, label, spec, audit)
}

// Logs: account.
func (s authorized) Logs(ctx context.Context, account, id string, w io.Writer, follow bool, flush func()) error {
	if !authz.ActsFor(ctx, account) {
		return errNotFound
	}
	return s.inner.Logs(ctx, account, id, w, follow, flush)
}

// List: account.
func (s authorized) List(ctx context.Context, account string) ([]api.Image, error) {
	if !authz.ActsFor(ctx, account) {
		return nil, errNotFound
	}
	return s.inner.List(ctx, account)
}

// Get: account.
func (s authorized) Get(ctx context.Context, account, id string) (api.Image, error) {
	if !authz.ActsFor(ctx, account) {
		return api.Image{}, errNotFound
	}
	return s.inner.Get(ctx, account, id)
}

// Delete: account.
func (s authorized) Delete(ctx context.Context, account, id string, inUse func(sandbox string) bool) error {
	if !authz.ActsFor(ctx, account) {
		return errNotFound
	}
	return s.inner.Delete(ctx, account, id, inUse)
}

// RootFS: account.
func (s authorized) RootFS(ctx context.Context, account, id string) (string, error) {
	if !authz.ActsFor(ctx, account) {
		return "", errNotFound
	}
	return s.inner.RootFS(ctx, account, id)
}

// Use: scoped.
func (s authorized) Use(ctx context.Context, id, sandbox string) error {
	return s.inner.Use(ctx, id, sandbox)
}
