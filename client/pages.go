package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-resty/resty/v2"

	"github.com/boxkite/boxkite/client/api"
)

// ListOptions asks a paged list (ListImagePage, ListWebhookPage) for one
// page.
type ListOptions struct {
	// Limit is the most items the page holds (1 to api.MaxListLimit); 0
	// asks for all of them at once.
	Limit int
	// Cursor is the Next of the page before; empty for the first page.
	Cursor string
}

// Page is one page of a paged list, newest first.
type Page[T any] struct {
	Items []T
	// Next is the cursor of the next page, empty on the last one.
	Next string
}

// listPage reads one page of the list at path. A server from before
// paging answers every item, as one last page.
func listPage[T any](ctx context.Context, c *Client, path string, o ListOptions) (*Page[T], error) {
	var p Page[T]
	h, err := c.doHeader(ctx, http.MethodGet, path, nil, &p.Items, func(r *resty.Request) {
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
	p.Next = api.NextCursor(h) // none without a limit, but on the deliveries' default page
	return &p, nil
}

// pages iterates over the list read page by page with read, pageSize
// items at a time (0: 100). It stops at the first error, which it yields.
func pages[T any](ctx context.Context, pageSize int, read func(context.Context, ListOptions) (*Page[T], error)) iter.Seq2[T, error] {
	if pageSize <= 0 {
		pageSize = 100
	}
	return func(yield func(T, error) bool) {
		o := ListOptions{Limit: pageSize}
		for {
			p, err := read(ctx, o)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			o.Cursor = p.Next
		}
	}
}

// ListImagePage returns one page of GET /v1/images: the account's
// images, newest first.
func (c *Client) ListImagePage(ctx context.Context, o ListOptions) (*Page[api.Image], error) {
	return listPage[api.Image](ctx, c, "/v1/images", o)
}

// ListImagesPage is ListImagePage in the terms of tools.Images (MCP's
// list_sandbox_images): at most limit images from cursor, and the cursor
// of the page after ("" on the last).
func (c *Client) ListImagesPage(ctx context.Context, limit int, cursor string) ([]api.Image, string, error) {
	p, err := c.ListImagePage(ctx, ListOptions{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	return p.Items, p.Next, nil
}

// Images iterates over the account's images, newest first, reading
// pageSize of them at a time (0: 100). An image made while it runs is
// not seen, and none is seen twice.
func (c *Client) Images(ctx context.Context, pageSize int) iter.Seq2[api.Image, error] {
	return pages(ctx, pageSize, c.ListImagePage)
}

// ListWebhookPage returns one page of GET /v1/webhooks: the
// subscriptions the key sees, newest first.
func (c *Client) ListWebhookPage(ctx context.Context, o ListOptions) (*Page[api.Webhook], error) {
	return listPage[api.Webhook](ctx, c, "/v1/webhooks", o)
}

// Webhooks iterates over the subscriptions the key sees, newest first,
// reading pageSize of them at a time (0: 100).
func (c *Client) Webhooks(ctx context.Context, pageSize int) iter.Seq2[api.Webhook, error] {
	return pages(ctx, pageSize, c.ListWebhookPage)
}

// ListWebhookDeliveryPage returns one page of the subscription's
// deliveries, newest first: o.Limit of them (1 to 100; 0 for the
// server's default of 20).
func (c *Client) ListWebhookDeliveryPage(ctx context.Context, id string, o ListOptions) (*Page[api.WebhookDelivery], error) {
	return listPage[api.WebhookDelivery](ctx, c, "/v1/webhooks/"+url.PathEscape(id)+"/deliveries", o)
}

// WebhookDeliveriesAt returns the limit deliveries of the subscription
// after its newest offset (GET …/deliveries?limit&offset), newest first,
// and in Next the cursor of those that follow ("" when none do, or from a
// server from before the deliveries' Link).
func (c *Client) WebhookDeliveriesAt(ctx context.Context, id string, limit, offset int) (*Page[api.WebhookDelivery], error) {
	path := "/v1/webhooks/" + url.PathEscape(id) + "/deliveries?offset=" + strconv.Itoa(offset)
	return listPage[api.WebhookDelivery](ctx, c, path, ListOptions{Limit: limit})
}

// WebhookDeliveryPages iterates over the subscription's deliveries,
// newest first, reading pageSize of them at a time (0 or more than 100:
// 100). A delivery queued while it runs is not seen, and none twice.
func (c *Client) WebhookDeliveryPages(ctx context.Context, id string, pageSize int) iter.Seq2[api.WebhookDelivery, error] {
	if pageSize <= 0 || pageSize > 100 {
		pageSize = 100
	}
	return pages(ctx, pageSize, func(ctx context.Context, o ListOptions) (*Page[api.WebhookDelivery], error) {
		return c.ListWebhookDeliveryPage(ctx, id, o)
	})
}
