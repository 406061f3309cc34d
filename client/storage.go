package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

// SyncStatus returns the workspace sync's state of sandbox id (GET
// …/sync): pending writes, the last flush and the last error.
func (c *Client) SyncStatus(ctx context.Context, id string) (*api.SyncStatus, error) {
	var st api.SyncStatus
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/sync", nil, &st, withID(id)); err != nil {
		return nil, err
	}
	return &st, nil
}

// FlushSync flushes sandbox id's workspace to object storage now (POST
// …/sync/flush) and returns the sync's state after it.
func (c *Client) FlushSync(ctx context.Context, id string) (*api.SyncStatus, error) {
	var st api.SyncStatus
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/sync/flush", nil, &st, withID(id)); err != nil {
		return nil, err
	}
	return &st, nil
}

// StoredFiles lists sandbox id's files in object storage (GET
// …/storage/files); it works after the sandbox is destroyed.
func (c *Client) StoredFiles(ctx context.Context, id string) (*api.StoredFiles, error) {
	var out api.StoredFiles
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/storage/files", nil, &out, withID(id)); err != nil {
		return nil, err
	}
	return &out, nil
}

// DownloadStored streams one of sandbox id's files from object storage
// (GET …/storage/files/raw), path relative to /workspace.
func (c *Client) DownloadStored(ctx context.Context, id, path string) (*Download, error) {
	return c.download(ctx, "/v1/sandboxes/{id}/storage/files/raw", id, url.Values{"path": {path}})
}

// DeleteStorage deletes sandbox id's files from object storage (DELETE
// …/storage).
func (c *Client) DeleteStorage(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/sandboxes/{id}/storage", nil, nil, withID(id))
}
