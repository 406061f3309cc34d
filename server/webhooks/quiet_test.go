package webhooks

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// countingStore counts reads of subscriptions and holds subs; before, if
// set, runs inside each read (to race a creation against it).
type countingStore struct {
	reachedStore
	reads  int
	subs   []*Subscription
	queued int
	before func()
}

func (s *countingStore) Webhooks(context.Context, string) ([]*Subscription, error) {
	s.reads++
	if s.before != nil {
		s.before()
	}
	return s.subs, nil
}

func (s *countingStore) EnqueueWebhookDeliveries(_ context.Context, ds []*Delivery) error {
	s.queued += len(ds)
	return nil
}

// TestEmitQuiet: with SoleServer, an account without subscriptions is
// read once and then answered with no store read; after a creation
// (forget) it is read again; a read that raced a creation is not kept;
// without SoleServer every Emit reads.
func TestEmitQuiet(t *testing.T) {
	var reached bool
	for _, sole := range []bool{true, false} {
		st := &countingStore{reachedStore: reachedStore{&reached}}
		svc, err := New(Deps{Store: st, Log: slog.New(slog.DiscardHandler), Now: time.Now, SoleServer: sole})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background() // no caller: the system
		emit := func() {
			t.Helper()
			if err := svc.Emit(ctx, "acct", "audit_log.entry", nil); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			emit()
		}
		if want := map[bool]int{true: 1, false: 3}[sole]; st.reads != want {
			t.Errorf("sole=%v: %d reads for 3 emits, want %d", sole, st.reads, want)
		}
		if !sole {
			continue
		}
		// A creation ends while a read is under way: that read's "none" is
		// not remembered, so the next Emit reads and finds the subscription.
		st.before = func() { svc.quiet.forget("acct") }
		svc.quiet.forget("acct")
		emit()
		st.before = nil
		st.subs = []*Subscription{{ID: "w", AccountID: "acct", Active: true, EventTypes: []string{"audit_log.entry"}}}
		emit()
		if st.reads != 3 || st.queued != 1 {
			t.Errorf("after creations: %d reads, %d queued; want 3 and 1", st.reads, st.queued)
		}
		emit()
		if st.reads != 4 || st.queued != 2 {
			t.Errorf("an account with a subscription: %d reads, %d queued; want 4 and 2", st.reads, st.queued)
		}
	}
}
