package webhooks

import (
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the webhooks routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/webhooks", Summary: "Subscribe a URL to events; the answer carries the signing secret, shown once", Request: api.CreateWebhookRequest{}, Response: api.Webhook{}, Status: http.StatusCreated}, Cred: httpx.CredAPIKey, Handler: s.create},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/webhooks", Summary: "List the account's webhook subscriptions (a member key: those its holder created), newest first; limit=N (1..1000) answers one page and a Link rel=\"next\" header to the next (cursor=)", Response: []api.Webhook{}, Query: []string{"limit", "cursor"}}, Cred: httpx.CredAPIKey, Handler: s.list},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/webhooks/{id}", Summary: "Get one webhook subscription", Response: api.Webhook{}}, Cred: httpx.CredAPIKey, Handler: s.get},
		{RouteDoc: httpx.RouteDoc{Pattern: "DELETE /v1/webhooks/{id}", Summary: "Delete a webhook subscription and its pending deliveries", Status: http.StatusNoContent}, Cred: httpx.CredAPIKey, Handler: s.delete},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/webhooks/{id}/deliveries", Summary: "A page of a subscription's deliveries, newest first (limit 1..100, 20 by default; offset; cursor= from the Link rel=\"next\" header)", Response: []api.WebhookDelivery{}, Query: []string{"limit", "offset", "cursor"}}, Cred: httpx.CredAPIKey, Handler: s.deliveries},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", Summary: "Send a delivered or failed delivery's event again, as a new delivery with the same event_id", Response: api.WebhookDelivery{}, Status: http.StatusAccepted}, Cred: httpx.CredAPIKey, Handler: s.redeliver},
		{RouteDoc: httpx.RouteDoc{Pattern: "POST /v1/webhooks/{id}/test", Summary: "Queue a webhook.test event for one subscription", Response: api.WebhookDelivery{}, Status: http.StatusAccepted}, Cred: httpx.CredAPIKey, Handler: s.test},
	}
}
