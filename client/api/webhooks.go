package api

import "time"

// Webhook error codes.
const (
	// CodeUnsafeWebhookURL answers a subscription whose URL is not http(s)
	// or points at a loopback, private or link-local address.
	CodeUnsafeWebhookURL = "unsafe_webhook_url"
	// CodeWebhookLimitReached answers a create past the account's 20 subscriptions.
	CodeWebhookLimitReached = "webhook_limit_reached"
)

// Webhook event types.
const (
	EventSandboxCreated   = "sandbox.created"
	EventSandboxDestroyed = "sandbox.destroyed"
	EventSandboxPaused    = "sandbox.paused"
	EventSandboxResumed   = "sandbox.resumed"
	EventSandboxLost      = "sandbox.lost"
	EventAuditLogEntry    = "audit_log.entry"
)

// Webhook payload formats.
const (
	PayloadBoxkiteV1 = "boxkite_v1"
	PayloadSplunkHEC = "splunk_hec"
)

// CreateWebhookRequest is the body of POST /v1/webhooks.
type CreateWebhookRequest struct {
	URL           string   `json:"url"`                      // http or https, at most 2048 bytes, not a private address
	EventTypes    []string `json:"event_types"`              // at least one; duplicates are dropped
	Description   string   `json:"description,omitempty"`    // free text, at most 500 characters
	PayloadFormat string   `json:"payload_format,omitempty"` // "boxkite_v1" (default) or "splunk_hec"
	HECToken      string   `json:"hec_token,omitempty"`      // sent as "Authorization: Splunk <token>" with splunk_hec
}

// Webhook is a subscription. Secret, with which deliveries are signed, is
// only in the answer to the create.
type Webhook struct {
	ID              string     `json:"id"`
	URL             string     `json:"url"`
	EventTypes      []string   `json:"event_types"`
	Description     string     `json:"description"`
	IsActive        bool       `json:"is_active"`
	PayloadFormat   string     `json:"payload_format"`
	CreatedAt       time.Time  `json:"created_at"`
	LastTriggeredAt *time.Time `json:"last_triggered_at"`
	// CreatedBy is, in an organization, the member whose key created the
	// subscription: their account id, as the organization's members list
	// shows it (account_id). Absent for a personal account's and for an
	// organization's created before migration 0297.
	CreatedBy string `json:"created_by,omitempty"`
	Secret    string `json:"secret,omitempty"`
}

// WebhookDelivery is one event's delivery to one subscription.
type WebhookDelivery struct {
	ID                 string     `json:"id"`
	EventID            string     `json:"event_id"`
	EventType          string     `json:"event_type"`
	Status             string     `json:"status"` // pending, delivered or failed
	AttemptCount       int        `json:"attempt_count"`
	NextAttemptAt      *time.Time `json:"next_attempt_at"`
	LastAttemptAt      *time.Time `json:"last_attempt_at"`
	ResponseStatusCode *int       `json:"response_status_code"`
	FailureReason      string     `json:"failure_reason,omitempty"`
	CreatedAt          time.Time  `json:"created_at"`
	DeliveredAt        *time.Time `json:"delivered_at"`
}

// WebhookEnvelope is the body of a boxkite_v1 delivery. EventID is the
// same for every attempt and every subscription of one event.
type WebhookEnvelope struct {
	EventID   string         `json:"event_id"`
	Event     string         `json:"event"`
	CreatedAt time.Time      `json:"created_at"`
	AccountID string         `json:"account_id"`
	Data      map[string]any `json:"data"`
}
