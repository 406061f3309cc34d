package client

import (
	"context"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// SandboxStats returns what the sandbox holds on its host now (memory and
// tasks), where the server's driver accounts for it; otherwise an
// *api.Error with code api.CodeNotSupported.
func (c *Client) SandboxStats(ctx context.Context, id string) (*api.SandboxStats, error) {
	var out api.SandboxStats
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/stats", nil, &out, withID(id)); err != nil {
		return nil, err
	}
	return &out, nil
}
