package webhooks

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// EventTypes are the events a subscription may take.
var eventTypes = []string{
	api.EventSandboxCreated, api.EventSandboxDestroyed, api.EventSandboxPaused,
	api.EventSandboxResumed, api.EventSandboxLost, api.EventAuditLogEntry,
}

const maxDescription = 500

// validate checks a create's body and returns its event types deduplicated.
func (s *Service) validate(req *api.CreateWebhookRequest) ([]string, error) {
	local, err := s.d.LocalAddrs()
	if err != nil {
		return nil, err
	}
	if err := checkURL(req.URL, s.d.AllowLoopback, local); err != nil {
		return nil, api.Errorf(http.StatusUnprocessableEntity, api.CodeUnsafeWebhookURL, "url: %v", err).
			WithHint(unsafeURLHint(err, req.URL, s.d.AllowLoopback))
	}
	if len(req.EventTypes) == 0 {
		return nil, httpx.Invalid("event_types", "event_types needs at least one event type", fmt.Sprintf("use some of %v", eventTypes))
	}
	var types []string
	for _, t := range req.EventTypes {
		if !slices.Contains(eventTypes, t) {
			return nil, httpx.Invalid("event_types", fmt.Sprintf("unknown event type %q", t), fmt.Sprintf("use some of %v", eventTypes))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if len(req.Description) > maxDescription {
		return nil, httpx.Invalid("description", fmt.Sprintf("description must be at most %d characters", maxDescription), "")
	}
	switch req.PayloadFormat {
	case "", api.PayloadBoxkiteV1:
		req.PayloadFormat = api.PayloadBoxkiteV1
		if req.HECToken != "" {
			// It would be stored and never sent: a mistyped format.
			return nil, httpx.Invalid("hec_token", "hec_token is only sent with payload_format splunk_hec",
				`set payload_format to "splunk_hec", or omit hec_token`)
		}
	case api.PayloadSplunkHEC:
		if req.HECToken == "" {
			return nil, httpx.Invalid("hec_token", "splunk_hec needs hec_token", "pass the HTTP Event Collector token")
		}
	default:
		return nil, httpx.Invalid("payload_format", fmt.Sprintf("unknown payload_format %q", req.PayloadFormat), "use boxkite_v1 or splunk_hec")
	}
	return types, nil
}

// create serves POST /v1/webhooks.
func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	var req api.CreateWebhookRequest
	if err := httpx.DecodeJSON(w, r, &req, httpx.MaxSmallBody); err != nil {
		return err
	}
	types, err := s.validate(&req)
	if err != nil {
		return err
	}
	acct := authz.Account(r.Context())
	sub := &Subscription{
		ID: model.NewID(), AccountID: acct.ID, URL: req.URL, EventTypes: types, Description: req.Description,
		PayloadFormat: req.PayloadFormat, HECToken: req.HECToken, Secret: newSecret(), Active: true, CreatedAt: s.d.Now(),
		MemberID: memberOf(r),
	}
	stored, err := s.sealed(sub)
	if err != nil {
		return err
	}
	err = s.store.CreateWebhook(r.Context(), stored, maxPerAccount)
	if s.quiet != nil {
		s.quiet.forget(acct.ID) // committed or not: read the store again
	}
	if errors.Is(err, ErrLimit) {
		return limitReached(r)
	}
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	out := sub.ToAPI()
	out.Secret = sub.Secret
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// limitReached refuses a create past the account's subscriptions. A
// member-role key of an organization lists only its holder's, so its
// hint says that the others count too.
func limitReached(r *http.Request) error {
	e := api.Errorf(http.StatusTooManyRequests, api.CodeWebhookLimitReached, "the account has %d webhook subscriptions, the most it may have", maxPerAccount)
	if k := authz.From(r.Context()).Key; k != nil && k.MemberID != "" && k.Role == model.RoleMember {
		return e.WithHint("the organization's subscriptions count, also those other members and admins created, which a member key does not list; " +
			"delete one of yours with `boxkite webhooks rm ID`, or ask an owner or admin of the organization to delete others with an admin key")
	}
	return e.WithHint("delete one with `boxkite webhooks rm ID`")
}

// newSecret is a subscription's signing secret: "whsec_" and 32 random bytes in hex.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// list serves GET /v1/webhooks: the subscriptions the caller sees
// (sees), newest first; all of them (an account has at most 20), or with
// limit and cursor one page and a Link rel="next" header, as
// GET /v1/sandboxes.
func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	p, err := httpx.ParsePage(r.URL.Query(), "webhook", 0, api.MaxListLimit)
	if err != nil {
		return err
	}
	subs, err := s.store.Webhooks(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return fmt.Errorf("list webhooks: %w", err)
	}
	seen := make([]*Subscription, 0, len(subs))
	for _, sub := range subs {
		if sees(r, sub) {
			seen = append(seen, sub)
		}
	}
	key := func(sub *Subscription) (time.Time, string) { return sub.CreatedAt, sub.ID }
	slices.SortFunc(seen, httpx.SortNewestFirst(key))
	page := httpx.CutPage(w, r, s.d.PublicURL, p, seen, key)
	out := make([]api.Webhook, len(page))
	for i, sub := range page {
		out[i] = sub.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// find returns the account's subscription named in the path, whoever
// created it.
func (s *Service) find(r *http.Request) (*Subscription, error) {
	id := r.PathValue("id")
	subs, err := s.store.Webhooks(r.Context(), authz.Account(r.Context()).ID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	for _, sub := range subs {
		if sub.ID == id {
			return sub, nil
		}
	}
	return nil, notFound(id)
}

// load returns the subscription named in the path if the caller sees it
// (sees), for a read or an action (test, redeliver, delete): one it does
// not see is 404, as one that does not exist, as everywhere in the
// cross-tenant rules (an id the caller may not see does not exist for it).
func (s *Service) load(r *http.Request) (*Subscription, error) {
	sub, err := s.find(r)
	if err != nil {
		return nil, err
	}
	if !sees(r, sub) {
		return nil, notFound(sub.ID)
	}
	return sub, nil
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.load(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, sub.ToAPI())
	return nil
}

// memberOf is the organization's member behind the request's key, ""
// for a personal account's.
func memberOf(r *http.Request) string {
	if k := authz.From(r.Context()).Key; k != nil {
		return k.MemberID
	}
	return ""
}

// sees reports whether the request's key sees and manages sub: a
// member-role key of an organization only the subscriptions its holder
// created (not those from before migration 0297, which name no member);
// an admin key any of the organization's, a personal account's key its own.
func sees(r *http.Request, sub *Subscription) bool {
	k := authz.From(r.Context()).Key
	return k == nil || k.MemberID == "" || k.Role != model.RoleMember || sub.MemberID == k.MemberID
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.load(r); err != nil {
		return err
	}
	err := s.store.DeleteWebhook(r.Context(), authz.Account(r.Context()).ID, id)
	if errors.Is(err, ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deliveries serves GET /v1/webhooks/{id}/deliveries?limit&offset&cursor:
// a page of the subscription's deliveries, newest first (limit 1 to 100,
// 20 by default), and a Link rel="next" header (with the cursor of the
// page's last delivery, offset left out) when more follow.
func (s *Service) deliveries(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.load(r)
	if err != nil {
		return err
	}
	pg, err := httpx.ParsePage(r.URL.Query(), "delivery", 20, 100)
	if err != nil {
		return err
	}
	offset, err := httpx.QueryInt(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	p := DeliveryPage{Limit: pg.Limit + 1, Offset: offset, AfterCreated: pg.AfterCreated, AfterID: pg.AfterID}
	ds, err := s.store.WebhookDeliveries(r.Context(), sub.AccountID, sub.ID, p)
	if err != nil {
		return fmt.Errorf("list webhook deliveries: %w", err)
	}
	if len(ds) > pg.Limit { // one more than asked: another page follows
		ds = ds[:pg.Limit]
		last := ds[len(ds)-1]
		httpx.SetNextLink(w, r, s.d.PublicURL, last.CreatedAt, last.ID, "offset")
	}
	out := make([]api.WebhookDelivery, len(ds))
	for i, d := range ds {
		out[i] = d.ToAPI()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// test serves POST /v1/webhooks/{id}/test: a webhook.test event queued
// for this subscription only.
func (s *Service) test(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.load(r)
	if err != nil {
		return err
	}
	ds, err := s.deliveriesFor([]*Subscription{sub}, sub.AccountID, "webhook.test", map[string]any{"webhook_id": sub.ID})
	if err != nil {
		return err
	}
	if err := s.store.EnqueueWebhookDeliveries(r.Context(), ds); err != nil {
		return fmt.Errorf("enqueue webhook test: %w", err)
	}
	s.Wake()
	httpx.WriteJSON(w, http.StatusAccepted, ds[0].ToAPI())
	return nil
}

// redeliver serves POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver:
// the delivery's event queued again for the same subscription, as a new
// delivery with the same event_id and body (a receiver that deduplicates
// on event_id drops it; one that lost it gets it). A delivery still
// pending is refused: it is sent anyway.
func (s *Service) redeliver(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.load(r)
	if err != nil {
		return err
	}
	id := r.PathValue("delivery_id")
	d, err := s.store.WebhookDelivery(r.Context(), sub.AccountID, sub.ID, id)
	if errors.Is(err, ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "delivery %s of webhook %s not found", id, sub.ID).
			WithHint("list them with `boxkite webhooks deliveries " + sub.ID + "`")
	}
	if err != nil {
		return fmt.Errorf("load webhook delivery: %w", err)
	}
	if d.Status == StatusPending {
		return api.Errorf(http.StatusConflict, api.CodeConflict, "delivery %s is still pending (%d attempts so far)", id, d.Attempts).
			WithHint("it is sent again at its next attempt; redeliver it once it is delivered or failed")
	}
	now := s.d.Now()
	again := &Delivery{
		ID: model.NewID(), WebhookID: sub.ID, AccountID: sub.AccountID, EventID: d.EventID, EventType: d.EventType,
		Payload: d.Payload, Status: StatusPending, NextAttemptAt: now, CreatedAt: now,
	}
	if err := s.store.EnqueueWebhookDeliveries(r.Context(), []*Delivery{again}); err != nil {
		return fmt.Errorf("enqueue webhook redelivery: %w", err)
	}
	s.Wake()
	httpx.WriteJSON(w, http.StatusAccepted, again.ToAPI())
	return nil
}

func notFound(id string) *api.Error {
	return api.Errorf(http.StatusNotFound, api.CodeNotFound, "webhook %s not found", id).
		WithHint("list them with `boxkite webhooks ls`")
}
