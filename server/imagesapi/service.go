package imagesapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the images API needs of the control plane.
type Deps struct {
	// Images keeps the images; nil for a server that keeps none (then
	// the routes are not served and image_id is not supported). New
	// keeps it behind the authorization layer (authz.go).
	Images Store
	Store  model.SandboxStore
	// Snapshots lists an account's snapshots: an image a snapshot needs
	// for its restore is not deleted.
	Snapshots interface {
		ListSnapshots(ctx context.Context, accountID, sandboxID string) ([]*model.Snapshot, error)
	}
	Audit *audit.Log
	Now   func() time.Time
	// WriteLogPage answers with a page of the audit chain of id.
	WriteLogPage func(w http.ResponseWriter, r *http.Request, id string, limit, offset int) error
	// PublicURL is the server's public base URL ("" when unset): the
	// Link header of a paged list points under it.
	PublicURL string
}

// Service serves the images API.
type Service struct{ d Deps }

// New returns the service; every field of d but Images is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Snapshots == nil || d.Audit == nil || d.Now == nil || d.WriteLogPage == nil {
		return nil, errors.New("imagesapi: a dependency is missing")
	}
	if d.Images != nil {
		d.Images = authorized{d.Images} // every call authorized against the request's caller
	}
	return &Service{d: d}, nil
}
