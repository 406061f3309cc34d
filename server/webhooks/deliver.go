package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// lease is how long a claimed delivery stays with its sender: past the
// attempt's timeout, so that only a sender that died loses it.
const lease = 2 * AttemptTimeout

// Emit queues event for each of the account's active subscriptions that
// take it. The event is stored before Emit returns, so it survives a
// restart; the worker sends it. It acts as the system (the server's own
// bookkeeping of what the caller did).
func (s *Service) Emit(ctx context.Context, accountID, event string, data any) error {
	return s.EmitFunc(ctx, accountID, event, func() any { return data })
}

// EmitFunc is Emit with the event's data built by data only when some
// subscription takes it.
func (s *Service) EmitFunc(ctx context.Context, accountID, event string, data func() any) error {
	var gen uint64
	if s.quiet != nil {
		var known bool
		if known, gen = s.quiet.known(accountID); known {
			return nil
		}
	}
	ctx = context.WithoutCancel(ctx)
	subs, err := s.store.Webhooks(ctx, accountID)
	if err != nil {
		return fmt.Errorf("list webhooks: %w", err)
	}
	if len(subs) == 0 && s.quiet != nil {
		s.quiet.remember(accountID, gen)
	}
	var takers []*Subscription
	for _, sub := range subs {
		if sub.Active && slices.Contains(sub.EventTypes, event) {
			takers = append(takers, sub)
		}
	}
	if len(takers) == 0 {
		return nil
	}
	ds, err := s.deliveriesFor(takers, accountID, event, data())
	if err != nil {
		return err
	}
	if err := s.store.EnqueueWebhookDeliveries(ctx, ds); err != nil {
		return fmt.Errorf("enqueue webhook deliveries: %w", err)
	}
	s.Wake()
	return nil
}

// envelope is api.WebhookEnvelope with data of any type.
type envelope struct {
	EventID   string    `json:"event_id"`
	Event     string    `json:"event"`
	CreatedAt time.Time `json:"created_at"`
	AccountID string    `json:"account_id"`
	Data      any       `json:"data"`
}

// deliveriesFor is one event's deliveries to subs, sharing its event id.
func (s *Service) deliveriesFor(subs []*Subscription, accountID, event string, data any) ([]*Delivery, error) {
	now := s.d.Now()
	env := envelope{EventID: model.NewID(), Event: event, CreatedAt: now.UTC(), AccountID: accountID, Data: data}
	body, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode webhook event: %w", err)
	}
	ds := make([]*Delivery, len(subs))
	for i, sub := range subs {
		ds[i] = &Delivery{
			ID: model.NewID(), WebhookID: sub.ID, AccountID: accountID, EventID: env.EventID, EventType: event,
			Payload: body, Status: StatusPending, NextAttemptAt: now, CreatedAt: now,
		}
	}
	return ds, nil
}

// Wake has the worker look for due deliveries now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// senders is how many deliveries one server sends at once.
const senders = 8

// Run sends due deliveries until ctx ends: every Poll, when woken, and
// whenever a sender is free again. It claims only as many deliveries as
// it has free senders, so each is sent as soon as it is leased: a slow
// receiver holds one sender, never the deliveries queued behind it, and
// a lease never runs out while its delivery waits for a sender (which
// would let another server send it too).
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.d.Poll)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := make(chan struct{}, senders)
	for {
		s.dispatch(ctx, busy, &wg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// dispatch claims up to one due delivery per free sender and starts
// sending each; a sender that finishes wakes Run to claim again.
func (s *Service) dispatch(ctx context.Context, busy chan struct{}, wg *sync.WaitGroup) {
	free := cap(busy) - len(busy)
	if free == 0 {
		return
	}
	now := s.d.Now()
	claims, err := s.store.ClaimWebhookDeliveries(ctx, s.d.Owner, now, now.Add(lease), free)
	if err != nil {
		if ctx.Err() == nil {
			s.d.Log.Error("claim webhook deliveries", "err", err)
		}
		return
	}
	for _, c := range claims {
		busy <- struct{}{}
		wg.Go(func() {
			defer func() { <-busy; s.Wake() }()
			s.attempt(ctx, c)
		})
	}
}

// attempt sends c once and records the outcome.
func (s *Service) attempt(ctx context.Context, c *Claim) {
	status, err := s.send(ctx, c)
	d := c.Delivery
	now := s.d.Now()
	d.Attempts++
	d.LastAttemptAt = now
	d.ResponseStatus = status
	switch {
	case err == nil:
		d.Status, d.DeliveredAt, d.FailureReason = StatusDelivered, now, ""
	case d.Attempts >= MaxAttempts:
		d.Status, d.FailureReason = StatusFailed, err.Error()
	default:
		d.FailureReason = err.Error()
		d.NextAttemptAt = now.Add(s.backoff(d.Attempts))
	}
	if ctx.Err() != nil && err != nil {
		return // shutting down: the lease runs out and another attempt follows
	}
	if err := s.store.FinishWebhookAttempt(context.WithoutCancel(ctx), s.d.Owner, &d); err != nil {
		s.d.Log.Error("record webhook attempt", "delivery", d.ID, "err", err)
	}
}

// send posts the delivery's body, signed; a 2xx answer delivers it.
func (s *Service) send(ctx context.Context, c *Claim) (int, error) {
	c, err := s.opened(c)
	if err != nil {
		return 0, err
	}
	body := c.Payload
	if c.PayloadFormat == api.PayloadSplunkHEC {
		var env struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal(c.Payload, &env); err != nil {
			return 0, fmt.Errorf("decode stored event: %w", err)
		}
		hec, err := json.Marshal(map[string]any{
			"time": float64(env.CreatedAt.UnixMilli()) / 1000, "host": "boxkite", "source": "boxkite:" + c.EventType,
			"sourcetype": "_json", "event": json.RawMessage(c.Payload),
		})
		if err != nil {
			return 0, fmt.Errorf("encode splunk event: %w", err)
		}
		body = hec
	}
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "boxkite-webhooks/1")
	req.Header.Set(SignatureHeader, Sign(c.Secret, s.d.Now(), body))
	req.Header.Set("X-Boxkite-Webhook-Event", c.EventType)
	req.Header.Set("X-Boxkite-Webhook-Id", c.WebhookID)
	if c.PayloadFormat == api.PayloadSplunkHEC {
		req.Header.Set("Authorization", "Splunk "+c.HECToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ue := (*unsafeTargetError)(nil); errors.As(err, &ue) {
			return 0, ue
		}
		return 0, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}
