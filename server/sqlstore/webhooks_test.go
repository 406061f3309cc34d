package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// testWebhooks: subscriptions round-trip and are scoped by account; the
// queue hands each due delivery to one of several concurrent claimers
// while its lease holds, to another once a claimer died with it, and a
// finished attempt reschedules or ends it.
func testWebhooks(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(webhooks.Store)
	ctx := t.Context()
	ms := st.(model.Store)
	a, b := mustAccount(t, ms, "a@example.com"), mustAccount(t, ms, "b@example.com")
	sub := &webhooks.Subscription{
		ID: model.NewID(), AccountID: a.ID, URL: "https://hook.example.com/in", EventTypes: []string{"sandbox.created", "audit_log.entry"},
		Description: "d", PayloadFormat: "boxkite_v1", Secret: "whsec_x", Active: true, CreatedAt: base,
	}
	if err := st.CreateWebhook(ctx, sub, 20); err != nil {
		t.Fatal(err)
	}
	got, err := st.Webhooks(ctx, a.ID)
	if err != nil || len(got) != 1 {
		t.Fatalf("Webhooks(A) = %v, %v", got, err)
	}
	if diff := cmp.Diff(sub, got[0]); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got, _ := st.Webhooks(ctx, b.ID); len(got) != 0 {
		t.Errorf("B lists A's webhooks: %v", got)
	}
	if err := st.DeleteWebhook(ctx, b.ID, sub.ID); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("B deleting A's webhook: %v, want ErrNotFound", err)
	}

	const n = 40
	ds := make([]*webhooks.Delivery, n)
	for i := range ds {
		ds[i] = &webhooks.Delivery{
			ID: model.NewID(), WebhookID: sub.ID, AccountID: a.ID, EventID: fmt.Sprint("ev", i), EventType: "sandbox.created",
			Payload: []byte(`{"n":1}`), Status: webhooks.StatusPending, NextAttemptAt: base, CreatedAt: base.Add(time.Duration(i) * time.Microsecond),
		}
	}
	if err := st.EnqueueWebhookDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	// Four claimers at once, small batches: every delivery once.
	now := base.Add(time.Second)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				cs, err := st.ClaimWebhookDeliveries(ctx, fmt.Sprint("owner", w), now, now.Add(time.Minute), 3)
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					seen[c.ID]++
					if c.URL != sub.URL || c.Secret != sub.Secret || string(c.Payload) != `{"n":1}` {
						t.Errorf("claim lacks its subscription: %+v", c)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d deliveries, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("delivery %s claimed %d times", id, k)
		}
	}
	// A claimer that died: its lease runs out, another takes the delivery.
	later := now.Add(2 * time.Minute)
	cs, err := st.ClaimWebhookDeliveries(ctx, "owner9", later, later.Add(time.Minute), 100)
	if err != nil || len(cs) != n {
		t.Fatalf("after the leases ran out: %d claims, %v; want %d", len(cs), err, n)
	}
	d := cs[0].Delivery
	d.Attempts, d.LastAttemptAt, d.ResponseStatus, d.FailureReason, d.NextAttemptAt = 1, later, 500, "the receiver answered 500", later.Add(30*time.Second)
	if err := st.FinishWebhookAttempt(ctx, "owner0", &d); err != nil { // not its lease: nothing
		t.Fatal(err)
	}
	if err := st.FinishWebhookAttempt(ctx, "owner9", &d); err != nil {
		t.Fatal(err)
	}
	if cs, _ := st.ClaimWebhookDeliveries(ctx, "owner1", later.Add(29*time.Second), later.Add(time.Hour), 100); len(cs) != 0 {
		t.Errorf("claimed %d before the retry was due (others still leased)", len(cs))
	}
	cs, err = st.ClaimWebhookDeliveries(ctx, "owner1", later.Add(30*time.Second), later.Add(time.Hour), 100)
	if err != nil || len(cs) != 1 || cs[0].ID != d.ID || cs[0].Attempts != 1 {
		t.Fatalf("the due retry: %v, %v", cs, err)
	}
	d = cs[0].Delivery
	d.Attempts, d.Status, d.DeliveredAt, d.ResponseStatus, d.FailureReason = 2, webhooks.StatusDelivered, later.Add(31*time.Second), 200, ""
	if err := st.FinishWebhookAttempt(ctx, "owner1", &d); err != nil {
		t.Fatal(err)
	}
	page, err := st.WebhookDeliveries(ctx, a.ID, sub.ID, webhooks.DeliveryPage{Limit: 100})
	if err != nil || len(page) != n || page[0].EventID != fmt.Sprint("ev", n-1) {
		t.Fatalf("WebhookDeliveries: %d, %v", len(page), err)
	}
	if page, _ := st.WebhookDeliveries(ctx, b.ID, sub.ID, webhooks.DeliveryPage{Limit: 100}); len(page) != 0 {
		t.Errorf("B reads A's deliveries: %d", len(page))
	}
	got, _ = st.Webhooks(ctx, a.ID)
	if !got[0].LastTriggeredAt.Equal(d.DeliveredAt) {
		t.Errorf("last_triggered_at = %v, want %v", got[0].LastTriggeredAt, d.DeliveredAt)
	}
	if err := st.DeleteWebhook(ctx, a.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	if page, _ := st.WebhookDeliveries(ctx, a.ID, sub.ID, webhooks.DeliveryPage{Limit: 100}); len(page) != 0 {
		t.Errorf("deliveries outlive their webhook: %d", len(page))
	}
}

// testWebhookFairClaim: an account holding its fair share of leases (a
// slow receiver, a backlog) does not get the next free sender while
// another account has a due delivery, even an older one of its own being
// due first; alone, it gets every sender.
func testWebhookFairClaim(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(webhooks.Store)
	ctx := t.Context()
	ms := st.(model.Store)
	enqueue := func(email string, n int, due time.Time) string {
		t.Helper()
		acct := mustAccount(t, ms, email)
		sub := &webhooks.Subscription{
			ID: model.NewID(), AccountID: acct.ID, URL: "https://hook.example.com/" + email, EventTypes: []string{"audit_log.entry"},
			PayloadFormat: "boxkite_v1", Secret: "whsec_x", Active: true, CreatedAt: base,
		}
		if err := st.CreateWebhook(ctx, sub, 20); err != nil {
			t.Fatal(err)
		}
		ds := make([]*webhooks.Delivery, n)
		for i := range ds {
			ds[i] = &webhooks.Delivery{
				ID: model.NewID(), WebhookID: sub.ID, AccountID: acct.ID, EventID: fmt.Sprint(email, i), EventType: "audit_log.entry",
				Payload: []byte(`{}`), Status: webhooks.StatusPending, NextAttemptAt: due.Add(time.Duration(i) * time.Millisecond), CreatedAt: base,
			}
		}
		if err := st.EnqueueWebhookDeliveries(ctx, ds); err != nil {
			t.Fatal(err)
		}
		return acct.ID
	}
	busy := enqueue("busy@example.com", 12, base)
	other := enqueue("other@example.com", 1, base.Add(time.Second)) // due after all of busy's
	now, until := base.Add(time.Minute), base.Add(2*time.Minute)
	claim := func(owner string, limit int) map[string]int {
		t.Helper()
		cs, err := st.ClaimWebhookDeliveries(ctx, owner, now, until, limit)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, c := range cs {
			got[c.AccountID]++
		}
		return got
	}
	if got := claim("s1", 4); got[busy] != 4 {
		t.Fatalf("first claim of 4: %v, want 4 of the account whose deliveries are due first", got)
	}
	// busy holds 4 leases now, its fair share; a freed sender goes to the
	// other account's later delivery.
	if got := claim("s2", 1); got[other] != 1 {
		t.Errorf("claim of 1 with busy holding 4 leases: %v, want the other account's delivery", got)
	}
	// Nothing else is due: busy gets the free senders (work-conserving).
	if got := claim("s3", 3); got[busy] != 3 {
		t.Errorf("claim of 3 with only busy's deliveries due: %v, want 3 of busy's", got)
	}
}

// testWebhookLimit: concurrent creates of one account stop at the limit
// (ErrLimit for the rest), whatever their interleaving.
func testWebhookLimit(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(webhooks.Store)
	ctx := t.Context()
	acct := mustAccount(t, st.(model.Store), "limit@example.com")
	const n, limit = 12, 5
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = st.CreateWebhook(ctx, &webhooks.Subscription{
				ID: model.NewID(), AccountID: acct.ID, URL: fmt.Sprint("https://hook.example.com/", i), EventTypes: []string{"sandbox.created"},
				PayloadFormat: "boxkite_v1", Secret: "whsec_x", Active: true, CreatedAt: base,
			}, limit)
		})
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, webhooks.ErrLimit):
			t.Errorf("create: %v, want nil or ErrLimit", err)
		}
	}
	if got, err := st.Webhooks(ctx, acct.ID); created != limit || err != nil || len(got) != limit {
		t.Errorf("%d creates succeeded, %d stored (%v); want %d", created, len(got), err, limit)
	}
}

// testWebhookDeliveryPages: a subscription's deliveries read with a
// cursor (the last delivery of the page before) are every delivery once,
// in the order of one read (created_at, then id, both descending), also
// where deliveries share their created_at, and with one queued between
// two pages (newer than every cursor).
func testWebhookDeliveryPages(t *testing.T, newStore storeFactory) {
	st := newStore(t)(t).(webhooks.Store)
	ctx := t.Context()
	a := mustAccount(t, st.(model.Store), "pages@example.com")
	sub := &webhooks.Subscription{
		ID: model.NewID(), AccountID: a.ID, URL: "https://hook.example.com/in", EventTypes: []string{"sandbox.created"},
		PayloadFormat: "boxkite_v1", Secret: "whsec_x", Active: true, CreatedAt: base,
	}
	if err := st.CreateWebhook(ctx, sub, 20); err != nil {
		t.Fatal(err)
	}
	delivery := func(at time.Time) *webhooks.Delivery {
		return &webhooks.Delivery{
			ID: model.NewID(), WebhookID: sub.ID, AccountID: a.ID, EventID: model.NewID(), EventType: "sandbox.created",
			Payload: []byte(`{}`), Status: webhooks.StatusPending, NextAttemptAt: base, CreatedAt: at,
		}
	}
	var ds []*webhooks.Delivery
	for i := range 11 {
		ds = append(ds, delivery(base.Add(time.Duration(i/3)*time.Millisecond)))
	}
	if err := st.EnqueueWebhookDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	all, err := st.WebhookDeliveries(ctx, a.ID, sub.ID, webhooks.DeliveryPage{Limit: 100})
	if err != nil || len(all) != 11 {
		t.Fatalf("one read: %d, %v", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		p, q := all[i-1], all[i]
		if p.CreatedAt.Before(q.CreatedAt) || p.CreatedAt.Equal(q.CreatedAt) && p.ID < q.ID {
			t.Fatalf("one read is not newest first, then id descending, at %d", i)
		}
	}
	var got []string
	p := webhooks.DeliveryPage{Limit: 3}
	for page := 0; ; page++ {
		ds, err := st.WebhookDeliveries(ctx, a.ID, sub.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			got = append(got, d.ID)
		}
		if len(ds) < p.Limit {
			break
		}
		if page == 0 { // queued between pages: newer than the cursor
			if err := st.EnqueueWebhookDeliveries(ctx, []*webhooks.Delivery{delivery(base.Add(time.Hour))}); err != nil {
				t.Fatal(err)
			}
		}
		p.AfterCreated, p.AfterID = ds[len(ds)-1].CreatedAt, ds[len(ds)-1].ID
	}
	var want []string
	for _, d := range all {
		want = append(want, d.ID)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged ids (-one read +paged):\n%s", diff)
	}
}
