package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

// CreateVolume calls POST /v1/volumes. The volume comes back ready; mount
// it with CreateSandboxRequest.VolumeMounts.
func (c *Client) CreateVolume(ctx context.Context, req api.CreateVolumeRequest) (*api.Volume, error) {
	var v api.Volume
	if err := c.do(ctx, http.MethodPost, "/v1/volumes", req, &v, nil); err != nil {
		return nil, err
	}
	return &v, nil
}

// ListVolumes calls GET /v1/volumes: the account's volumes, newest first.
func (c *Client) ListVolumes(ctx context.Context) ([]api.Volume, error) {
	var vs []api.Volume
	if err := c.do(ctx, http.MethodGet, "/v1/volumes", nil, &vs, nil); err != nil {
		return nil, err
	}
	return vs, nil
}

// GetVolume calls GET /v1/volumes/{id}.
func (c *Client) GetVolume(ctx context.Context, id string) (*api.Volume, error) {
	var v api.Volume
	if err := c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(id), nil, &v, nil); err != nil {
		return nil, err
	}
	return &v, nil
}

// DeleteVolume calls DELETE /v1/volumes/{id}, which deletes its data. A
// volume an active sandbox mounts is refused (409 volume_in_use).
func (c *Client) DeleteVolume(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(id), nil, nil, nil)
}

// CreateMCPConnection calls POST /v1/mcp-connections.
func (c *Client) CreateMCPConnection(ctx context.Context, req api.CreateMCPConnectionRequest) (*api.MCPConnection, error) {
	var m api.MCPConnection
	if err := c.do(ctx, http.MethodPost, "/v1/mcp-connections", req, &m, nil); err != nil {
		return nil, err
	}
	return &m, nil
}

// ListMCPConnections calls GET /v1/mcp-connections, newest first.
func (c *Client) ListMCPConnections(ctx context.Context) ([]api.MCPConnection, error) {
	var ms []api.MCPConnection
	if err := c.do(ctx, http.MethodGet, "/v1/mcp-connections", nil, &ms, nil); err != nil {
		return nil, err
	}
	return ms, nil
}

// GetMCPConnection calls GET /v1/mcp-connections/{id}.
func (c *Client) GetMCPConnection(ctx context.Context, id string) (*api.MCPConnection, error) {
	var m api.MCPConnection
	if err := c.do(ctx, http.MethodGet, "/v1/mcp-connections/"+url.PathEscape(id), nil, &m, nil); err != nil {
		return nil, err
	}
	return &m, nil
}

// DeleteMCPConnection calls DELETE /v1/mcp-connections/{id}.
func (c *Client) DeleteMCPConnection(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/mcp-connections/"+url.PathEscape(id), nil, nil, nil)
}
