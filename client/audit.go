package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// Log returns a page of the audit log of sandbox id, oldest first. limit 0
// means the server's default (api.DefaultLogLimit).
func (c *Client) Log(ctx context.Context, id string, limit, offset int) (*api.LogPage, error) {
	return c.logPage(ctx, "/v1/sandboxes/{id}/log", id, limit, offset)
}

// ImageLog returns a page of the audit log of image id's build (its
// egress decisions, refusals and outcome), oldest first.
func (c *Client) ImageLog(ctx context.Context, id string, limit, offset int) (*api.LogPage, error) {
	return c.logPage(ctx, "/v1/images/{id}/log", id, limit, offset)
}

func (c *Client) logPage(ctx context.Context, route, id string, limit, offset int) (*api.LogPage, error) {
	var res api.LogPage
	err := c.do(ctx, http.MethodGet, route, nil, &res, func(r *resty.Request) {
		r.SetPathParam("id", id)
		if limit > 0 {
			r.SetQueryParam("limit", strconv.Itoa(limit))
		}
		if offset > 0 {
			r.SetQueryParam("offset", strconv.Itoa(offset))
		}
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}
