package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
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
// activeOnly is set: every one, in one answer. Sandboxes pages through
// them instead.
func (c *Client) ListSandboxes(ctx context.Context, activeOnly bool) ([]api.Sandbox, error) {
	p, err := c.ListSandboxPage(ctx, SandboxListOptions{ActiveOnly: activeOnly})
	if err != nil {
		return nil, err
	}
	return p.Sandboxes, nil
}

// SandboxListOptions asks ListSandboxPage for one page of sandboxes.
type SandboxListOptions struct {
	// ActiveOnly lists only the live sandboxes (active or paused).
	ActiveOnly bool
	// Limit is the most sandboxes the page holds (1 to
	// api.MaxSandboxListLimit); 0 asks for all of them at once.
	Limit int
	// Cursor is the Next of the page before; empty for the first page.
	Cursor string
}

// SandboxPage is one page of the account's sandboxes, newest first.
type SandboxPage struct {
	Sandboxes []api.Sandbox
	// Next is the cursor of the next page, empty on the last one.
	Next string
}

// ListSandboxPage returns one page of the account's sandboxes. A server
// from before paging answers every sandbox, as one last page.
func (c *Client) ListSandboxPage(ctx context.Context, o SandboxListOptions) (*SandboxPage, error) {
	var p SandboxPage
	h, err := c.doHeader(ctx, http.MethodGet, "/v1/sandboxes", nil, &p.Sandboxes, func(r *resty.Request) {
		r.SetQueryParam("active_only", strconv.FormatBool(o.ActiveOnly))
		if o.Limit > 0 {
			r.SetQueryParam("limit", strconv.Itoa(o.Limit))
		}
		if o.Cursor != "" {
			r.SetQueryParam("cursor", o.Cursor)
		}
	})
	if err != nil {
		return nil, err
	}
	if o.Limit > 0 {
		p.Next = api.NextCursor(h)
	}
	return &p, nil
}

// ListSandboxesPage is ListSandboxPage in the terms of tools.Sandboxes
// (MCP's list_sandboxes): at most limit sandboxes from cursor, and the
// cursor of the page after ("" on the last).
func (c *Client) ListSandboxesPage(ctx context.Context, activeOnly bool, limit int, cursor string) ([]api.Sandbox, string, error) {
	p, err := c.ListSandboxPage(ctx, SandboxListOptions{ActiveOnly: activeOnly, Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	return p.Sandboxes, p.Next, nil
}

// NewestSandboxes returns the account's newest limit sandboxes (1 to
// api.MaxSandboxListLimit), ended ones included, and whether there are
// more: the first page of ListSandboxPage, cut to limit when a server
// from before paging answers all of them.
func (c *Client) NewestSandboxes(ctx context.Context, limit int) ([]api.Sandbox, bool, error) {
	p, err := c.ListSandboxPage(ctx, SandboxListOptions{Limit: limit})
	if err != nil {
		return nil, false, err
	}
	if len(p.Sandboxes) > limit {
		return p.Sandboxes[:limit], true, nil
	}
	return p.Sandboxes, p.Next != "", nil
}

// Sandboxes iterates over the account's sandboxes, newest first, reading
// pageSize of them at a time (0: 100). A sandbox created while it runs is
// not seen, and none is seen twice. It stops at the first error, which
// it yields.
func (c *Client) Sandboxes(ctx context.Context, activeOnly bool, pageSize int) iter.Seq2[api.Sandbox, error] {
	return pages(ctx, pageSize, func(ctx context.Context, o ListOptions) (*Page[api.Sandbox], error) {
		p, err := c.ListSandboxPage(ctx, SandboxListOptions{ActiveOnly: activeOnly, Limit: o.Limit, Cursor: o.Cursor})
		if err != nil {
			return nil, err
		}
		return &Page[api.Sandbox]{Items: p.Sandboxes, Next: p.Next}, nil
	})
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
