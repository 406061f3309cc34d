package allowlists

import (
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/internal/allowlist"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the allowlists service needs of the control plane.
type Deps struct {
	Store model.AllowlistStore
	// Cache holds compiled allowlists, shared with the E2B port.
	Cache *allowlist.Cache
	Now   func() time.Time
}

// Service serves and enforces the accounts' command allowlists.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Cache == nil || d.Now == nil {
		return nil, errors.New("allowlists: a dependency is missing")
	}
	return &Service{d: d}, nil
}
