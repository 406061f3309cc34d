package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
	"github.com/go-resty/resty/v2"
)

// ImportImage calls POST /v1/images/import with archive (an OCI layout tar
// or a docker save archive) as the body, streamed. The image comes back
// queued; poll GetImage until it is completed or failed. Give ctx a
// deadline for large archives: without one the default request timeout
// applies.
func (c *Client) ImportImage(ctx context.Context, label string, archive io.Reader) (*api.Image, error) {
	var img api.Image
	err := c.do(ctx, http.MethodPost, "/v1/images/import", nil, &img, func(r *resty.Request) {
		r.SetHeader("Content-Type", "application/x-tar").SetBody(archive)
		if label != "" {
			r.SetQueryParam("label", label)
		}
	})
	if err != nil {
		return nil, err
	}
	return &img, nil
}

// CreateImage calls POST /v1/images: a declarative build, queued.
func (c *Client) CreateImage(ctx context.Context, req api.CreateImageRequest) (*api.Image, error) {
	var img api.Image
	if err := c.do(ctx, http.MethodPost, "/v1/images", req, &img, nil); err != nil {
		return nil, err
	}
	return &img, nil
}

// ListImages calls GET /v1/images: the account's images, newest first.
func (c *Client) ListImages(ctx context.Context) ([]api.Image, error) {
	var imgs []api.Image
	if err := c.do(ctx, http.MethodGet, "/v1/images", nil, &imgs, nil); err != nil {
		return nil, err
	}
	return imgs, nil
}

// GetImage calls GET /v1/images/{id}.
func (c *Client) GetImage(ctx context.Context, id string) (*api.Image, error) {
	var img api.Image
	if err := c.do(ctx, http.MethodGet, "/v1/images/"+url.PathEscape(id), nil, &img, nil); err != nil {
		return nil, err
	}
	return &img, nil
}

// DeleteImage calls DELETE /v1/images/{id}. An image a sandbox still boots
// from is refused (409).
func (c *Client) DeleteImage(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/images/"+url.PathEscape(id), nil, nil, nil)
}

// ImageLogs copies the build log of image id to w: what there is so far,
// or with follow everything until the build ends. Bound it with ctx.
func (c *Client) ImageLogs(ctx context.Context, id string, follow bool, w io.Writer) error {
	const route = "/v1/images/{id}/logs"
	r := c.request(ctx).SetDoNotParseResponse(true).SetPathParam("id", id)
	if follow {
		r.SetQueryParam("follow", "1")
	}
	resp, err := r.Get(route)
	if err != nil {
		return c.transportError(ctx, http.MethodGet, route, err)
	}
	body := resp.RawBody()
	defer body.Close()
	if err := c.checkStream(resp.RawResponse, "text/plain"); err != nil {
		return err
	}
	if _, err := io.Copy(w, body); err != nil {
		return fmt.Errorf("read image logs: %w", err)
	}
	return nil
}
