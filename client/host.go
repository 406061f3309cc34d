package client

import (
	"context"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// Host calls GET /v1/host (admin keys): the host's use of its limits,
// the disk against the free-space watermark, whether the audit log can
// be written, and the disk use of the account's active sandboxes.
func (c *Client) Host(ctx context.Context) (*api.HostStatus, error) {
	var out api.HostStatus
	if err := c.do(ctx, http.MethodGet, "/v1/host", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
