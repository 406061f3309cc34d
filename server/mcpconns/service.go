package mcpconns

import (
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the MCP connections service needs of the control plane.
type Deps struct {
	Store model.MCPConnectionStore
	Now   func() time.Time
	// Catalog maps a catalog id to the host (host:port; port 443 when
	// omitted) a connection to it grants.
	Catalog map[string]string
}

// Service serves MCP connections.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Now == nil || d.Catalog == nil {
		return nil, errors.New("mcpconns: a dependency is missing")
	}
	return &Service{d: d}, nil
}
