package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// Subscription is a stored webhook subscription.
type Subscription struct {
	ID            string
	AccountID     string
	URL           string
	EventTypes    []string
	Description   string
	PayloadFormat string
	HECToken      string
	Secret        string
	Active        bool
	// MemberID is the organization's member who created it with a key of
	// the organization: removed with them; "" for a personal account's.
	MemberID        string
	CreatedAt       time.Time
	LastTriggeredAt time.Time // zero: never
}

// ToAPI is the subscription's wire form, without its secret.
func (s *Subscription) ToAPI() api.Webhook {
	out := api.Webhook{
		ID: s.ID, URL: s.URL, EventTypes: s.EventTypes, Description: s.Description,
		IsActive: s.Active, PayloadFormat: s.PayloadFormat, CreatedAt: s.CreatedAt.UTC(),
		CreatedBy: s.MemberID,
	}
	out.LastTriggeredAt = timePtr(s.LastTriggeredAt)
	return out
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is one event to send to one subscription: a row of the queue
// and of the deliveries log.
type Delivery struct {
	ID             string
	WebhookID      string
	AccountID      string
	EventID        string
	EventType      string
	Payload        []byte // the envelope, JSON
	Status         string
	Attempts       int
	NextAttemptAt  time.Time
	LastAttemptAt  time.Time // zero: not yet tried
	ResponseStatus int       // 0: no answer
	FailureReason  string
	CreatedAt      time.Time
	DeliveredAt    time.Time
	LeaseOwner     string
	LeaseUntil     time.Time
}

// ToAPI is the delivery's wire form.
func (d *Delivery) ToAPI() api.WebhookDelivery {
	out := api.WebhookDelivery{
		ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.Attempts,
		LastAttemptAt: timePtr(d.LastAttemptAt), FailureReason: d.FailureReason,
		CreatedAt: d.CreatedAt.UTC(), DeliveredAt: timePtr(d.DeliveredAt),
	}
	if d.Status == StatusPending {
		out.NextAttemptAt = timePtr(d.NextAttemptAt)
	}
	if d.ResponseStatus != 0 {
		c := d.ResponseStatus
		out.ResponseStatusCode = &c
	}
	return out
}

// DeliveryPage is the page of a subscription's deliveries to read: at
// most Limit of them, after the cursor (AfterCreated, AfterID; none when
// AfterID is ""), skipping Offset more.
type DeliveryPage struct {
	Limit, Offset int
	AfterCreated  time.Time
	AfterID       string
}

// Claim is a delivery leased to one sender, with what it needs to send it.
type Claim struct {
	Delivery
	URL           string
	Secret        string
	PayloadFormat string
	HECToken      string
}

// ErrNotFound is a Store's answer for no such subscription.
var ErrNotFound = errors.New("webhook not found")

// ErrLimit is CreateWebhook's answer when the account holds as many
// subscriptions as it may.
var ErrLimit = errors.New("webhook limit reached")

// Store keeps subscriptions and the queue of deliveries.
type Store interface {
	// CreateWebhook inserts w unless its account holds limit
	// subscriptions already (ErrLimit), atomically: two concurrent
	// creates cannot both pass the count.
	CreateWebhook(ctx context.Context, w *Subscription, limit int) error
	// Webhooks returns the account's subscriptions, newest first.
	Webhooks(ctx context.Context, accountID string) ([]*Subscription, error)
	// DeleteWebhook removes the account's subscription and its
	// deliveries, or returns ErrNotFound.
	DeleteWebhook(ctx context.Context, accountID, id string) error
	// WebhookDeliveries returns a page of the subscription's deliveries,
	// newest first (created_at, then id, both descending).
	WebhookDeliveries(ctx context.Context, accountID, webhookID string, p DeliveryPage) ([]*Delivery, error)
	// WebhookDelivery returns one delivery of the account's subscription,
	// or ErrNotFound.
	WebhookDelivery(ctx context.Context, accountID, webhookID, id string) (*Delivery, error)
	// EnqueueWebhookDeliveries inserts ds (one event for each subscription
	// of the account that takes it) in one transaction.
	EnqueueWebhookDeliveries(ctx context.Context, ds []*Delivery) error
	// ClaimWebhookDeliveries leases to owner until `until` at most limit
	// pending deliveries due at now whose lease has run out, and returns
	// them. Two claims never return the same delivery while its lease holds.
	ClaimWebhookDeliveries(ctx context.Context, owner string, now, until time.Time, limit int) ([]*Claim, error)
	// FinishWebhookAttempt records an attempt of d (its status, attempts,
	// next attempt, answer) and ends owner's lease; it does nothing if
	// the lease is no longer owner's. A delivered d also sets its
	// subscription's last_triggered_at.
	FinishWebhookAttempt(ctx context.Context, owner string, d *Delivery) error
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
