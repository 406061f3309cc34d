package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/boxkite/boxkite/client/api"
)

// CreateWebhook calls POST /v1/webhooks; the answer's Secret is shown only here.
func (c *Client) CreateWebhook(ctx context.Context, req api.CreateWebhookRequest) (*api.Webhook, error) {
	var w api.Webhook
	if err := c.do(ctx, http.MethodPost, "/v1/webhooks", req, &w, nil); err != nil {
		return nil, err
	}
	return &w, nil
}

// ListWebhooks calls GET /v1/webhooks, newest first.
func (c *Client) ListWebhooks(ctx context.Context) ([]api.Webhook, error) {
	var ws []api.Webhook
	if err := c.do(ctx, http.MethodGet, "/v1/webhooks", nil, &ws, nil); err != nil {
		return nil, err
	}
	return ws, nil
}

// GetWebhook calls GET /v1/webhooks/{id}.
func (c *Client) GetWebhook(ctx context.Context, id string) (*api.Webhook, error) {
	var w api.Webhook
	if err := c.do(ctx, http.MethodGet, "/v1/webhooks/"+url.PathEscape(id), nil, &w, nil); err != nil {
		return nil, err
	}
	return &w, nil
}

// DeleteWebhook calls DELETE /v1/webhooks/{id}.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/webhooks/"+url.PathEscape(id), nil, nil, nil)
}

// WebhookDeliveries calls GET /v1/webhooks/{id}/deliveries, newest first.
func (c *Client) WebhookDeliveries(ctx context.Context, id string, limit, offset int) ([]api.WebhookDelivery, error) {
	var ds []api.WebhookDelivery
	p := fmt.Sprintf("/v1/webhooks/%s/deliveries?limit=%d&offset=%d", url.PathEscape(id), limit, offset)
	if err := c.do(ctx, http.MethodGet, p, nil, &ds, nil); err != nil {
		return nil, err
	}
	return ds, nil
}

// RedeliverWebhook calls POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver:
// a delivered or failed delivery's event queued again, with the same event id.
func (c *Client) RedeliverWebhook(ctx context.Context, id, deliveryID string) (*api.WebhookDelivery, error) {
	var d api.WebhookDelivery
	p := "/v1/webhooks/" + url.PathEscape(id) + "/deliveries/" + url.PathEscape(deliveryID) + "/redeliver"
	if err := c.do(ctx, http.MethodPost, p, nil, &d, nil); err != nil {
		return nil, err
	}
	return &d, nil
}

// TestWebhook calls POST /v1/webhooks/{id}/test: a webhook.test event
// queued for that subscription.
func (c *Client) TestWebhook(ctx context.Context, id string) (*api.WebhookDelivery, error) {
	var d api.WebhookDelivery
	if err := c.do(ctx, http.MethodPost, "/v1/webhooks/"+url.PathEscape(id)+"/test", nil, &d, nil); err != nil {
		return nil, err
	}
	return &d, nil
}
