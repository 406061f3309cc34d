package client

import (
	"context"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// CreateSnapshot snapshots the sandbox's filesystem.
func (c *Client) CreateSnapshot(ctx context.Context, sandboxID, label string) (*api.Snapshot, error) {
	var sn api.Snapshot
	body := api.CreateSnapshotRequest{Label: label}
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/snapshots", body, &sn, withID(sandboxID)); err != nil {
		return nil, err
	}
	return &sn, nil
}

// Snapshots lists the account's snapshots, newest first: of one sandbox,
// or all when sandboxID is "".
func (c *Client) Snapshots(ctx context.Context, sandboxID string) ([]api.Snapshot, error) {
	var out []api.Snapshot
	var err error
	if sandboxID == "" {
		err = c.do(ctx, http.MethodGet, "/v1/snapshots", nil, &out, nil)
	} else {
		err = c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/snapshots", nil, &out, withID(sandboxID))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Snapshot returns one snapshot.
func (c *Client) Snapshot(ctx context.Context, id string) (*api.Snapshot, error) {
	var sn api.Snapshot
	if err := c.do(ctx, http.MethodGet, "/v1/snapshots/{id}", nil, &sn, withID(id)); err != nil {
		return nil, err
	}
	return &sn, nil
}

// DeleteSnapshot deletes a snapshot.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/snapshots/{id}", nil, nil, withID(id))
}

// RestoreSnapshot creates a new sandbox from a snapshot.
func (c *Client) RestoreSnapshot(ctx context.Context, id, label string) (*api.Sandbox, error) {
	var sb api.Sandbox
	body := api.RestoreSnapshotRequest{Label: label}
	if err := c.do(ctx, http.MethodPost, "/v1/snapshots/{id}/restore", body, &sb, withID(id)); err != nil {
		return nil, err
	}
	return &sb, nil
}

// ForkSandbox creates count children of the sandbox, each starting from
// its filesystem as it is now.
func (c *Client) ForkSandbox(ctx context.Context, id string, count int) ([]api.Sandbox, error) {
	var out []api.Sandbox
	body := api.ForkSandboxRequest{Count: count}
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/fork", body, &out, withID(id)); err != nil {
		return nil, err
	}
	return out, nil
}
