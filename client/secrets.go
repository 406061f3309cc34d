package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// CreateSecret calls POST /v1/secrets (admin keys). The answer has no value.
func (c *Client) CreateSecret(ctx context.Context, req api.CreateSecretRequest) (*api.Secret, error) {
	var s api.Secret
	if err := c.do(ctx, http.MethodPost, "/v1/secrets", req, &s, nil); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSecrets calls GET /v1/secrets: the account's secrets by name, without values.
func (c *Client) ListSecrets(ctx context.Context) ([]api.Secret, error) {
	var ss []api.Secret
	if err := c.do(ctx, http.MethodGet, "/v1/secrets", nil, &ss, nil); err != nil {
		return nil, err
	}
	return ss, nil
}

// UpdateSecret calls PUT /v1/secrets/{id}; id may be the secret's name.
func (c *Client) UpdateSecret(ctx context.Context, id string, req api.UpdateSecretRequest) (*api.Secret, error) {
	var s api.Secret
	if err := c.do(ctx, http.MethodPut, "/v1/secrets/"+pathSegment(id), req, &s, nil); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSecret calls DELETE /v1/secrets/{id}; id may be the secret's name.
func (c *Client) DeleteSecret(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/secrets/"+pathSegment(id), nil, nil, nil)
}

// HTTPRequest calls POST /v1/sandboxes/{id}/http-request: the control plane
// makes req with the sandbox's secrets filled in for {{secret:NAME}}.
func (c *Client) HTTPRequest(ctx context.Context, id string, req api.HTTPRequest) (*api.HTTPResponse, error) {
	var out api.HTTPResponse
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/http-request", req, &out, withID(id)); err != nil {
		return nil, err
	}
	return &out, nil
}

// HTTPRequest makes a brokered request for the sandbox; see Client.HTTPRequest.
func (s *Sandbox) HTTPRequest(ctx context.Context, req api.HTTPRequest) (*api.HTTPResponse, error) {
	return s.c.HTTPRequest(ctx, s.id, req)
}

// CreatePreview calls POST /v1/sandboxes/{id}/preview/{port}: a preview URL
// of the port, valid for req.TTLSeconds. The answer carries the token.
func (c *Client) CreatePreview(ctx context.Context, id string, port int, req api.CreatePreviewRequest) (*api.Preview, error) {
	var p api.Preview
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes/{id}/preview/"+strconv.Itoa(port), req, &p, withID(id)); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListPreviews calls GET /v1/sandboxes/{id}/previews: the live previews.
func (c *Client) ListPreviews(ctx context.Context, id string) ([]api.Preview, error) {
	var ps []api.Preview
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes/{id}/previews", nil, &ps, withID(id)); err != nil {
		return nil, err
	}
	return ps, nil
}

// RevokePreviews calls DELETE /v1/sandboxes/{id}/preview/{port}: every
// live preview of the port answers 401 from then on.
func (c *Client) RevokePreviews(ctx context.Context, id string, port int) error {
	return c.do(ctx, http.MethodDelete, "/v1/sandboxes/{id}/preview/"+strconv.Itoa(port), nil, nil, withID(id))
}

// pathSegment is s escaped as one segment of a path. A name may be "." or
// ".." (a secret's may: letters, digits, '_', '-' and '.'), which
// url.PathEscape leaves as is and a URL's path takes as "this" and "up"
// (the server's router cleans /v1/secrets/.. to /v1/): their dots are
// escaped, which the server's {id} decodes back.
func pathSegment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}
