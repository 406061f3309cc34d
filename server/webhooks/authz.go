package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// errSystemOnly refuses a caller the queue's own methods.
var errSystemOnly = errors.New("webhooks: only the server itself may do this")

// authorized is the Store a Service keeps (New wraps its store in it): it
// authorizes each call against the caller of the request it serves, as
// server/internal/authz's Store does for model.Store. Kinds, named on
// each method:
//
//   - account: the account id argument must be the caller's;
//   - record: the account of each record written must be the caller's;
//   - system: only the server's own work (no caller).
//
// A refused account check is ErrNotFound, as for another account's
// subscription. TestStoreAuthorized fails for a method without a rule.
type authorized struct{ inner Store }

var _ Store = authorized{}

// CreateWebhook: record.
func (s authorized) CreateWebhook(ctx context.Context, w *Subscription, limit int) error {
	if !authz.ActsFor(ctx, w.AccountID) {
		return ErrNotFound
	}
	return s.inner.CreateWebhook(ctx, w, limit)
}

// Webhooks: account.
func (s authorized) Webhooks(ctx context.Context, accountID string) ([]*Subscription, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.Webhooks(ctx, accountID)
}

// DeleteWebhook: account.
func (s authorized) DeleteWebhook(ctx context.Context, accountID, id string) error {
	if !authz.ActsFor(ctx, accountID) {
		return ErrNotFound
	}
	return s.inner.DeleteWebhook(ctx, accountID, id)
}

// WebhookDeliveries: account.
func (s authorized) WebhookDeliveries(ctx context.Context, accountID, webhookID string, p DeliveryPage) ([]*Delivery, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.WebhookDeliveries(ctx, accountID, webhookID, p)
}

// WebhookDelivery: account.
func (s authorized) WebhookDelivery(ctx context.Context, accountID, webhookID, id string) (*Delivery, error) {
	if !authz.ActsFor(ctx, accountID) {
		return nil, ErrNotFound
	}
	return s.inner.WebhookDelivery(ctx, accountID, webhookID, id)
}

// EnqueueWebhookDeliveries: record.
func (s authorized) EnqueueWebhookDeliveries(ctx context.Context, ds []*Delivery) error {
	for _, d := range ds {
		if !authz.ActsFor(ctx, d.AccountID) {
			return ErrNotFound
		}
	}
	return s.inner.EnqueueWebhookDeliveries(ctx, ds)
}

// ClaimWebhookDeliveries: system.
func (s authorized) ClaimWebhookDeliveries(ctx context.Context, owner string, now, until time.Time, limit int) ([]*Claim, error) {
	if !authz.IsSystem(ctx) {
		return nil, errSystemOnly
	}
	return s.inner.ClaimWebhookDeliveries(ctx, owner, now, until, limit)
}

// FinishWebhookAttempt: system.
func (s authorized) FinishWebhookAttempt(ctx context.Context, owner string, d *Delivery) error {
	if !authz.IsSystem(ctx) {
		return errSystemOnly
	}
	return s.inner.FinishWebhookAttempt(ctx, owner, d)
}
