package hostedmcp

import (
	"errors"
	"net/http"
)

// Deps is what the hosted MCP endpoint needs of the control plane.
type Deps struct {
	// Version is the server's release, as the MCP server reports it.
	Version string
	// Serve is the control plane's REST API: each tool call is the REST
	// request the caller's key would make, served in-process, so
	// authentication, the allowlist, rate limits, quotas and the audit
	// log apply exactly as they do to the API.
	Serve http.Handler
}

// Service serves the hosted MCP endpoint.
type Service struct{ d Deps }

// New returns the service; every field of d is required.
func New(d Deps) (*Service, error) {
	if d.Serve == nil {
		return nil, errors.New("hostedmcp: a dependency is missing")
	}
	return &Service{d: d}, nil
}
