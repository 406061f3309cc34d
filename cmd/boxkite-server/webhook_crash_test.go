package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// crashReceiver is a webhook endpoint on 127.0.0.1. While hanging it
// holds every request without answering (the deliveries are in flight);
// otherwise it answers 200. It records each request's event id, body and
// whether its signature verified.
type crashReceiver struct {
	secret string

	mu       sync.Mutex
	hanging  bool
	release  chan struct{}
	inFlight map[string]bool // event ids received while hanging
	answered map[string]int  // event id → 200 answers
	bodies   map[string]string
	badSigs  int
}

func newCrashReceiver(t *testing.T) (*crashReceiver, string) {
	rc := &crashReceiver{
		release: make(chan struct{}), inFlight: map[string]bool{}, answered: map[string]int{}, bodies: map[string]string{},
	}
	hs := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(hs.Close)
	t.Cleanup(rc.unhang) // before hs.Close: a held handler would block it
	return rc, hs.URL + "/hook"
}

func (rc *crashReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var env api.WebhookEnvelope
	_ = json.Unmarshal(body, &env)
	rc.mu.Lock()
	if !webhooks.Verify(rc.secret, r.Header.Get(webhooks.SignatureHeader), body, time.Now(), 5*time.Minute) {
		rc.badSigs++
	}
	if prev, ok := rc.bodies[env.EventID]; ok && prev != string(body) {
		rc.badSigs++ // a second send of one event must be the same event
	}
	rc.bodies[env.EventID] = string(body)
	hanging, release := rc.hanging, rc.release
	if hanging {
		rc.inFlight[env.EventID] = true
	}
	rc.mu.Unlock()
	if hanging {
		<-release // the sender is killed meanwhile; nobody reads this answer
		return
	}
	rc.mu.Lock()
	rc.answered[env.EventID]++
	rc.mu.Unlock()
}

func (rc *crashReceiver) hang() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.hanging = true
}

func (rc *crashReceiver) unhang() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.hanging {
		rc.hanging = false
		close(rc.release)
	}
}

func (rc *crashReceiver) snapshot() (inFlight map[string]bool, answered map[string]int, badSigs int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	inFlight, answered = map[string]bool{}, map[string]int{}
	for k, v := range rc.inFlight {
		inFlight[k] = v
	}
	for k, v := range rc.answered {
		answered[k] = v
	}
	return inFlight, answered, rc.badSigs
}

// TestWebhookKillNine (issue 24, acceptance 2): the real boxkite-server is
// SIGKILLed while deliveries are in flight and others are queued; after a
// restart on the same database every event is delivered (the queued ones
// at once, the ones in flight once their lease runs out). Without a crash
// nothing is sent twice; after it, only the deliveries that were in flight
// at the kill are sent again, with the same event id and body. Takes about
// 25 s: the dead server's leases (20 s) run out first.
func TestWebhookKillNine(t *testing.T) {
	stateDir, err := os.MkdirTemp("", "bxk-whcrash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	key := model.NewAPIKey()
	srv := startServer(t, stateDir, key, "--webhook-allow-loopback")
	ctx := context.Background()
	rc, url := newCrashReceiver(t)
	var hook api.Webhook
	if _, err := call(ctx, srv.base, key, "POST", "/v1/webhooks", api.CreateWebhookRequest{URL: url, EventTypes: []string{api.EventSandboxCreated}}, &hook); err != nil {
		t.Fatalf("subscribe: %v\n%s", err, srv.out.String())
	}
	rc.mu.Lock()
	rc.secret = hook.Secret
	rc.mu.Unlock()
	queue := func(n int) []string {
		var ids []string
		for range n {
			var d api.WebhookDelivery
			if _, err := call(ctx, srv.base, key, "POST", "/v1/webhooks/"+hook.ID+"/test", nil, &d); err != nil {
				t.Fatalf("queue a test event: %v\n%s", err, srv.out.String())
			}
			ids = append(ids, d.EventID)
		}
		return ids
	}

	// Before the crash: each event is answered once.
	before := queue(5)
	waitFor(t, "the first events are delivered", func() bool {
		_, answered, _ := rc.snapshot()
		return len(answered) == len(before)
	})

	// Deliveries in flight (the receiver holds them) and queued behind
	// them (eight are sent at a time), then the kill.
	rc.hang()
	during := queue(20)
	waitFor(t, "deliveries are in flight", func() bool {
		inFlight, _, _ := rc.snapshot()
		return len(inFlight) >= 8
	})
	if err := srv.kill(); err != nil {
		t.Fatal(err)
	}
	rc.unhang()

	srv = startServer(t, stateDir, key, "--webhook-allow-loopback")
	after := queue(3)
	all := append(append(append([]string(nil), before...), during...), after...)
	waitFor(t, "every event is delivered after the restart", func() bool {
		_, answered, _ := rc.snapshot()
		for _, id := range all {
			if answered[id] == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond) // a duplicate would arrive now
	inFlight, answered, badSigs := rc.snapshot()
	if badSigs != 0 {
		t.Errorf("%d deliveries had a bad signature or a changed body", badSigs)
	}
	for _, id := range all {
		if answered[id] != 1 {
			t.Errorf("event %s (in flight at the kill: %v) was answered %d times", id, inFlight[id], answered[id])
		}
	}
	for id := range inFlight {
		if !slices.Contains(during, id) {
			t.Errorf("event %s was in flight at the kill but was not queued then", id)
		}
	}
	var ds []api.WebhookDelivery
	if _, err := call(ctx, srv.base, key, "GET", "/v1/webhooks/"+hook.ID+"/deliveries?limit=100", nil, &ds); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		// One recorded attempt each: a send cut by the kill records
		// none, and no delivery waited behind a held one until its
		// attempt timed out.
		if d.Status != webhooks.StatusDelivered || d.AttemptCount != 1 {
			t.Errorf("delivery %s of event %s is %s after %d attempts (%s)", d.ID, d.EventID, d.Status, d.AttemptCount, d.FailureReason)
		}
	}
	if len(ds) != len(all) {
		t.Errorf("the log has %d deliveries for %d events", len(ds), len(all))
	}
	t.Logf("%d events, %d in flight at the kill", len(all), len(inFlight))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
