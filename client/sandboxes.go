package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// Health calls GET /health: the server process is up.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var h api.Health
	if err := c.do(ctx, http.MethodGet, "/health", nil, &h, nil); err != nil {
		return nil, err
	}
	return &h, nil
}

// Ready calls GET /health/ready and returns nil when the server can take
// requests (its store and driver are up).
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/health/ready", nil, nil, nil)
}

// CreateSandbox creates one sandbox. req.Count must be 0 or 1; use
// CreateSandboxes for more.
func (c *Client) CreateSandbox(ctx context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error) {
	if req.Count > 1 {
		return nil, errors.New("create sandbox: count > 1 needs CreateSandboxes")
	}
	sbs, err := c.CreateSandboxes(ctx, req)
	if err != nil {
		return nil, err
	}
	if len(sbs) != 1 {
		return nil, fmt.Errorf("create sandbox: server returned %d sandboxes, want 1", len(sbs))
	}
	return &sbs[0], nil
}

// CreateSandboxes creates req.Count sandboxes (1 when zero). The API answers
// with an object for one and an array for several; this always returns a slice.
func (c *Client) CreateSandboxes(ctx context.Context, req api.CreateSandboxRequest) ([]api.Sandbox, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes", req, &raw, nil); err != nil {
		return nil, err
	}
	if b := bytes.TrimLeft(raw, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var sbs []api.Sandbox
		if err := json.Unmarshal(b, &sbs); err != nil {
			return nil, fmt.Errorf("decode created sandboxes: %w", err)
		}
		return sbs, nil
	}
	var sb api.Sandbox
	if err := json.Unmarshal(raw, &sb); err != nil {
		return nil, fmt.Errorf("decode created sandbox: %w", err)
	}
	return []api.Sandbox{sb}, nil
}

// ListSandboxes lists the account's sandboxes, only the active ones when
// activeOnly is set.
func (c *Client) ListSandboxes(ctx context.Context, activeOnly bool) ([]api.Sandbox, error) {
	var sbs []api.Sandbox
	err := c.do(ctx, http.MethodGet, "/v1/sandboxes", nil, &sbs, func(r *resty.Request) {
		r.SetQueryParam("active_only", strconv.FormatBool(activeOnly))
	})
	if err != nil {
		return nil, err
	}
	return sbs, nil
}

// Sandbox returns one sandbox, destroyed ones included.
func (c *Client) Sandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	var sb api.Sandbox
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}", nil, &sb, withID(id)); err != nil {
		return nil, err
	}
	return &sb, nil
}

// DeleteSandbox destroys a sandbox.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/sandboxes/{id}", nil, nil, withID(id))
}

// ExtendSandbox sets a sandbox to expire lifetimeMinutes from now (within the
// server's ceiling) and returns the updated sandbox with its new ExpiresAt.
func (c *Client) ExtendSandbox(ctx context.Context, id string, lifetimeMinutes int) (*api.Sandbox, error) {
	var sb api.Sandbox
	body := api.ExtendSandboxRequest{LifetimeMinutes: lifetimeMinutes}
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/extend", body, &sb, withID(id)); err != nil {
		return nil, err
	}
	return &sb, nil
}

func withID(id string) func(*resty.Request) {
	return func(r *resty.Request) { r.SetPathParam("id", id) }
}

// PauseSandbox pauses the sandbox in mode (api.PauseFreeze, the default
// when "", api.PauseFilesystem or api.PauseCheckpoint).
func (c *Client) PauseSandbox(ctx context.Context, id, mode string) (*api.Sandbox, error) {
	var sb api.Sandbox
	body := api.PauseSandboxRequest{Mode: mode}
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/pause", body, &sb, withID(id)); err != nil {
		return nil, err
	}
	return &sb, nil
}

// ResumeSandbox resumes a paused sandbox: same id and endpoints. After a
// filesystem pause the answer says what became of its background processes.
func (c *Client) ResumeSandbox(ctx context.Context, id string) (*api.ResumeResult, error) {
	var res api.ResumeResult
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/resume", nil, &res, withID(id)); err != nil {
		return nil, err
	}
	return &res, nil
}
