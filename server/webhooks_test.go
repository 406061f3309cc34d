package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/webhooks"
)

// receiver is a webhook endpoint on 127.0.0.1 that records what it got
// and answers with status(n) for the n-th request (1-based).
type receiver struct {
	URL    string
	mu     sync.Mutex
	got    []received
	status func(n int) int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	rc := &receiver{status: status}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), body})
		n := len(rc.got)
		rc.mu.Unlock()
		w.WriteHeader(rc.status(n))
	}))
	t.Cleanup(hs.Close)
	rc.URL = hs.URL + "/hook"
	return rc
}

func (rc *receiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func webhookConfig() server.Config {
	return server.Config{Webhooks: server.WebhookConfig{AllowLoopback: true, BackoffBase: time.Minute, Poll: 20 * time.Millisecond}}
}

// runServer runs srv's background work until the test ends.
func runServer(t *testing.T, srv *server.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func subscribe(t *testing.T, e *env, key, url string, events ...string) api.Webhook {
	t.Helper()
	resp, body := e.do("POST", "/v1/webhooks", key, api.CreateWebhookRequest{URL: url, EventTypes: events})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	var w api.Webhook
	mustUnmarshal(t, body, &w)
	if w.Secret == "" {
		t.Fatal("the create's answer has no secret")
	}
	return w
}

func deliveries(t *testing.T, e *env, key, id string) []api.WebhookDelivery {
	t.Helper()
	resp, body := e.do("GET", "/v1/webhooks/"+id+"/deliveries", key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deliveries: %d %s", resp.StatusCode, body)
	}
	var ds []api.WebhookDelivery
	mustUnmarshal(t, body, &ds)
	return ds
}

// TestWebhookSignedDelivery: creating and deleting a sandbox sends
// sandbox.created and sandbox.destroyed to a receiver on 127.0.0.1, each
// signed as docs/webhooks.md says, with the envelope's fields; the
// deliveries log shows them delivered; POST …/test sends webhook.test;
// the list never shows the secret.
func TestWebhookSignedDelivery(t *testing.T) {
	e := newEnv(t, webhookConfig())
	runServer(t, e.Server)
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	hook := subscribe(t, e, e.KeyA, rc.URL, api.EventSandboxCreated, api.EventSandboxDestroyed)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{Label: "hooked"})
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	eventually(t, "two deliveries", func() bool { return len(rc.received()) == 2 })
	events := map[string]bool{}
	for _, r := range rc.received() {
		sig := r.header.Get(webhooks.SignatureHeader)
		if !webhooks.Verify(hook.Secret, sig, r.body, e.clock.Now(), 5*time.Minute) {
			t.Errorf("signature %q does not verify", sig)
		}
		if webhooks.Verify("whsec_other", sig, r.body, e.clock.Now(), 5*time.Minute) {
			t.Error("the signature verifies under another secret")
		}
		var env api.WebhookEnvelope
		mustUnmarshal(t, r.body, &env)
		if env.EventID == "" || env.AccountID != e.AcctA.ID || env.Data["session_id"] != sb.ID || r.header.Get("X-Boxkite-Webhook-Event") != env.Event || r.header.Get("X-Boxkite-Webhook-Id") != hook.ID {
			t.Errorf("delivery: %s %v", r.body, r.header)
		}
		events[env.Event] = true
	}
	if !events[api.EventSandboxCreated] || !events[api.EventSandboxDestroyed] {
		t.Errorf("events = %v", events)
	}
	eventually(t, "the log shows both delivered", func() bool {
		ds := deliveries(t, e, e.KeyA, hook.ID)
		return len(ds) == 2 && ds[0].Status == webhooks.StatusDelivered && ds[1].Status == webhooks.StatusDelivered
	})
	// POST …/test queues a webhook.test event for this subscription.
	resp, body := e.do("POST", "/v1/webhooks/"+hook.ID+"/test", e.KeyA, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", resp.StatusCode, body)
	}
	eventually(t, "the test event", func() bool { return len(rc.received()) == 3 })
	if r := rc.received()[2]; r.header.Get("X-Boxkite-Webhook-Event") != "webhook.test" || !webhooks.Verify(hook.Secret, r.header.Get(webhooks.SignatureHeader), r.body, e.clock.Now(), time.Minute) {
		t.Errorf("test delivery: %v %s", r.header, r.body)
	}
	_, body = e.do("GET", "/v1/webhooks", e.KeyA, nil)
	var list []api.Webhook
	mustUnmarshal(t, body, &list)
	if len(list) != 1 || list[0].Secret != "" || list[0].LastTriggeredAt == nil {
		t.Errorf("list: %s", body)
	}
}

// TestWebhookRedeliver: a delivered delivery is sent again on request as
// a new delivery with the same event id and body; a pending one is 409,
// another account's and an unknown one 404.
func TestWebhookRedeliver(t *testing.T) {
	e := newEnv(t, webhookConfig())
	runServer(t, e.Server)
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	hook := subscribe(t, e, e.KeyA, rc.URL, api.EventSandboxCreated)
	resp, body := e.do("POST", "/v1/webhooks/"+hook.ID+"/test", e.KeyA, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("test: %d %s", resp.StatusCode, body)
	}
	var first api.WebhookDelivery
	mustUnmarshal(t, body, &first)
	redeliver := func(key, id string) (*http.Response, []byte) {
		return e.do("POST", "/v1/webhooks/"+hook.ID+"/deliveries/"+id+"/redeliver", key, nil)
	}
	eventually(t, "the first attempt fails", func() bool {
		ds := deliveries(t, e, e.KeyA, hook.ID)
		return len(ds) == 1 && ds[0].AttemptCount == 1
	})
	if resp, body := redeliver(e.KeyA, first.ID); resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), `"conflict"`) {
		t.Errorf("redeliver a pending delivery: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(time.Hour)
	eventually(t, "the retry delivers", func() bool { return deliveries(t, e, e.KeyA, hook.ID)[0].Status == webhooks.StatusDelivered })

	resp, body = redeliver(e.KeyA, first.ID)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", resp.StatusCode, body)
	}
	var again api.WebhookDelivery
	mustUnmarshal(t, body, &again)
	if again.ID == first.ID || again.EventID != first.EventID || again.Status != webhooks.StatusPending || again.AttemptCount != 0 {
		t.Errorf("redelivery %+v of %+v", again, first)
	}
	eventually(t, "the redelivery arrives", func() bool { return len(rc.received()) == 3 })
	got := rc.received()
	if string(got[2].body) != string(got[1].body) || !webhooks.Verify(hook.Secret, got[2].header.Get(webhooks.SignatureHeader), got[2].body, e.clock.Now(), time.Minute) {
		t.Errorf("redelivered %s, first delivered %s", got[2].body, got[1].body)
	}
	eventually(t, "the log shows both delivered", func() bool {
		ds := deliveries(t, e, e.KeyA, hook.ID)
		return len(ds) == 2 && ds[0].ID == again.ID && ds[0].Status == webhooks.StatusDelivered && ds[1].Status == webhooks.StatusDelivered
	})
	for name, c := range map[string]struct{ key, id string }{
		"another account": {e.KeyB, first.ID},
		"unknown":         {e.KeyA, model.NewID()},
	} {
		if resp, body := redeliver(c.key, c.id); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"hint"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
}

// TestWebhookRetries: while the receiver answers 500 each attempt is
// rescheduled BackoffBase × 2^(n-1) later (on the server's clock), and the
// delivery goes through once it answers 200; a delivery that fails six
// times is failed.
func TestWebhookRetries(t *testing.T) {
	e := newEnv(t, webhookConfig())
	runServer(t, e.Server)
	rc := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	hook := subscribe(t, e, e.KeyA, rc.URL, api.EventSandboxCreated)
	e.create(e.KeyA, api.CreateSandboxRequest{})
	for attempt := 1; attempt <= 3; attempt++ {
		eventually(t, "a failed attempt", func() bool {
			ds := deliveries(t, e, e.KeyA, hook.ID)
			return len(ds) == 1 && ds[0].AttemptCount == attempt
		})
		d := deliveries(t, e, e.KeyA, hook.ID)[0]
		wait := time.Minute << (attempt - 1)
		if d.Status != webhooks.StatusPending || d.ResponseStatusCode == nil || *d.ResponseStatusCode != 500 || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(d.LastAttemptAt.Add(wait)) {
			t.Fatalf("after attempt %d: %+v, want pending, retry in %v", attempt, d, wait)
		}
		e.clock.Advance(wait - time.Second)
		time.Sleep(100 * time.Millisecond) // a few polls: not yet due
		if n := len(rc.received()); n != attempt {
			t.Fatalf("%d attempts before the retry was due, want %d", n, attempt)
		}
		e.clock.Advance(time.Second)
	}
	eventually(t, "delivered on the fourth attempt", func() bool {
		ds := deliveries(t, e, e.KeyA, hook.ID)
		return ds[0].Status == webhooks.StatusDelivered && ds[0].AttemptCount == 4
	})
	bodies := rc.received()
	for _, r := range bodies[1:] {
		if string(r.body) != string(bodies[0].body) {
			t.Errorf("a retry's body differs: %s vs %s", r.body, bodies[0].body)
		}
	}

	// Always 500: failed after six attempts.
	bad := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	hook2 := subscribe(t, e, e.KeyA, bad.URL, api.EventSandboxCreated)
	e.create(e.KeyA, api.CreateSandboxRequest{})
	for attempt := 1; attempt <= webhooks.MaxAttempts; attempt++ {
		eventually(t, "an attempt recorded", func() bool {
			ds := deliveries(t, e, e.KeyA, hook2.ID)
			return len(ds) == 1 && ds[0].AttemptCount == attempt
		})
		e.clock.Advance(time.Hour)
	}
	eventually(t, "failed", func() bool {
		ds := deliveries(t, e, e.KeyA, hook2.ID)
		return ds[0].Status == webhooks.StatusFailed && ds[0].AttemptCount == webhooks.MaxAttempts
	})
}

// TestWebhookRestart: events queued by a server that stopped before
// sending them (or died holding their lease) are delivered by the next
// server on the same store.
func TestWebhookRestart(t *testing.T) {
	e := newEnv(t, webhookConfig()) // its worker never runs: "killed"
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	subscribe(t, e, e.KeyA, rc.URL, api.EventSandboxCreated)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	time.Sleep(100 * time.Millisecond)
	if n := len(rc.received()); n != 0 {
		t.Fatalf("%d deliveries without a worker", n)
	}
	srv2, err := server.New(webhookConfig(), e.Store, e.Driver, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv2.SetNow(e.clock.Now)
	runServer(t, srv2)
	eventually(t, "the restarted server delivers", func() bool { return len(rc.received()) == 1 })
	var env api.WebhookEnvelope
	if err := json.Unmarshal(rc.received()[0].body, &env); err != nil || env.Data["session_id"] != sb.ID {
		t.Errorf("delivery: %v %+v", err, env)
	}
}

// TestWebhookURLChecks: private, loopback and link-local targets are
// refused with 422 unsafe_webhook_url (127.0.0.1 only when the operator
// allowed it), as are other schemes; unknown event types are 422 validation_error.
func TestWebhookURLChecks(t *testing.T) {
	strict := newEnv(t, server.Config{})
	loose := newEnv(t, webhookConfig())
	for _, tc := range []struct {
		env  *env
		url  string
		want int
		// loopbackHint: the hint says how the operator lets a receiver
		// at 127.0.0.1 in (a server that already does refuses the rest).
		loopbackHint bool
	}{
		{strict, "http://127.0.0.1:9/x", 422, true},
		{strict, "http://localhost:9/x", 422, true},
		{strict, "http://10.0.0.1/x", 422, false},
		{strict, "http://169.254.169.254/latest/meta-data", 422, false},
		{strict, "http://[::1]/x", 422, true},
		{strict, "http://[fd00::1]/x", 422, false},
		{strict, "ftp://hooks.example.com/x", 422, false},
		{strict, "https://hooks.example.com/x", 201, false},
		{loose, "http://127.0.0.1:9/x", 201, false},
		{loose, "http://127.0.0.2:9/x", 422, false},
		{loose, "http://192.168.1.1/x", 422, false},
	} {
		resp, body := tc.env.do("POST", "/v1/webhooks", tc.env.KeyA, api.CreateWebhookRequest{URL: tc.url, EventTypes: []string{api.EventAuditLogEntry}})
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.url, resp.StatusCode, body, tc.want)
		} else if tc.want == 422 {
			e := wantError(t, resp, body, 422, api.CodeUnsafeWebhookURL)
			if says := strings.Contains(e.Hint, "--webhook-allow-loopback"); says != tc.loopbackHint {
				t.Errorf("%s: hint %q; want --webhook-allow-loopback in it: %v", tc.url, e.Hint, tc.loopbackHint)
			}
		}
	}
	resp, body := strict.do("POST", "/v1/webhooks", strict.KeyA, api.CreateWebhookRequest{URL: "https://hooks.example.com/x", EventTypes: []string{"sandbox.exploded"}})
	wantError(t, resp, body, 422, api.CodeValidation)
	// A hec_token without splunk_hec was stored and never sent.
	for _, format := range []string{"", api.PayloadBoxkiteV1} {
		resp, body = strict.do("POST", "/v1/webhooks", strict.KeyA, api.CreateWebhookRequest{
			URL: "https://hooks.example.com/x", EventTypes: []string{api.EventAuditLogEntry}, PayloadFormat: format, HECToken: "T",
		})
		if e := wantError(t, resp, body, 422, api.CodeValidation); e.Hint == "" {
			t.Errorf("hec_token with format %q: no hint in %s", format, body)
		}
	}
}

// TestWebhookReplicas: two servers on one Postgres database send each of
// 200 queued events exactly once between them (no crash, so no
// duplicates), each event's body carrying its own event_id.
func TestWebhookReplicas(t *testing.T) {
	es, _ := newReplicas(t, 2, webhookConfig())
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	hook := subscribe(t, es[0], es[0].KeyA, rc.URL, api.EventSandboxCreated)
	st := es[0].Store.(webhooks.Store)
	now := es[0].clock.Now()
	const n = 200
	ds := make([]*webhooks.Delivery, n)
	for i := range ds {
		id := model.NewID()
		ds[i] = &webhooks.Delivery{
			ID: model.NewID(), WebhookID: hook.ID, AccountID: es[0].AcctA.ID, EventID: id, EventType: "webhook.test",
			Payload: []byte(`{"event_id":"` + id + `","event":"webhook.test"}`), Status: webhooks.StatusPending, NextAttemptAt: now, CreatedAt: now,
		}
	}
	if err := st.EnqueueWebhookDeliveries(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	eventually(t, "200 deliveries", func() bool { return len(rc.received()) >= n })
	time.Sleep(200 * time.Millisecond) // a few more polls: nothing more arrives
	got := rc.received()
	seen := map[string]int{}
	for _, r := range got {
		var env api.WebhookEnvelope
		mustUnmarshal(t, r.body, &env)
		seen[env.EventID]++
	}
	if len(got) != n || len(seen) != n {
		t.Errorf("%d requests for %d events, want %d of each", len(got), len(seen), n)
	}
}

// TestWebhookSplunkHEC: a splunk_hec subscription gets the HEC event
// around the envelope, with its token, still signed.
func TestWebhookSplunkHEC(t *testing.T) {
	e := newEnv(t, webhookConfig())
	runServer(t, e.Server)
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	resp, body := e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: rc.URL, EventTypes: []string{api.EventSandboxCreated}, PayloadFormat: api.PayloadSplunkHEC, HECToken: "hec-tok"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	var hook api.Webhook
	mustUnmarshal(t, body, &hook)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	eventually(t, "a delivery", func() bool { return len(rc.received()) == 1 })
	r := rc.received()[0]
	var hec struct {
		Time       float64             `json:"time"`
		Host       string              `json:"host"`
		Source     string              `json:"source"`
		Sourcetype string              `json:"sourcetype"`
		Event      api.WebhookEnvelope `json:"event"`
	}
	mustUnmarshal(t, r.body, &hec)
	if r.header.Get("Authorization") != "Splunk hec-tok" || hec.Host != "boxkite" || hec.Source != "boxkite:sandbox.created" || hec.Sourcetype != "_json" ||
		hec.Time == 0 || hec.Event.Data["session_id"] != sb.ID {
		t.Errorf("HEC delivery: %v %s", r.header, r.body)
	}
	if !webhooks.Verify(hook.Secret, r.header.Get(webhooks.SignatureHeader), r.body, e.clock.Now(), time.Minute) {
		t.Error("the HEC delivery's signature does not verify")
	}
	resp, body = e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: rc.URL, EventTypes: []string{api.EventSandboxCreated}, PayloadFormat: api.PayloadSplunkHEC})
	wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
}

// TestWebhookSecretsSealed: on a server with a secrets key, a
// subscription's signing secret and HEC token are stored encrypted (the
// database files never hold them), and deliveries still carry the HEC
// token and a signature that verifies with the secret the create showed.
func TestWebhookSecretsSealed(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	cfg := webhookConfig()
	cfg.Secrets = testSecrets(t, st)
	e := newEnvWithStore(t, cfg, st)
	runServer(t, e.Server)
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	const hecToken = "hec-token-that-must-not-be-stored"
	resp, body := e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: rc.URL, EventTypes: []string{api.EventSandboxCreated}, PayloadFormat: api.PayloadSplunkHEC, HECToken: hecToken})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	var hook api.Webhook
	mustUnmarshal(t, body, &hook)
	e.create(e.KeyA, api.CreateSandboxRequest{})
	eventually(t, "a delivery", func() bool { return len(rc.received()) == 1 })
	r := rc.received()[0]
	if r.header.Get("Authorization") != "Splunk "+hecToken || !webhooks.Verify(hook.Secret, r.header.Get(webhooks.SignatureHeader), r.body, e.clock.Now(), time.Minute) {
		t.Errorf("delivery: %v %s", r.header, r.body)
	}
	files, err := filepath.Glob(filepath.Join(dir, "boxkite.db*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("database files: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, plain := range []string{hook.Secret, hecToken} {
			if bytes.Contains(b, []byte(plain)) {
				t.Errorf("%s holds %q in the clear", filepath.Base(f), plain)
			}
		}
	}
}

// TestWebhookQuietAccountSubscribes: an account's execs before it has a
// subscription queue nothing (and teach the server that it has none);
// the first exec after it subscribes to audit_log.entry is delivered.
func TestWebhookQuietAccountSubscribes(t *testing.T) {
	e := newEnv(t, webhookConfig())
	runServer(t, e.Server)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.exec(e.KeyA, sb.ID, "echo before")
	e.exec(e.KeyA, sb.ID, "echo before again")
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	subscribe(t, e, e.KeyA, rc.URL, api.EventAuditLogEntry)
	e.exec(e.KeyA, sb.ID, "echo after")
	eventually(t, "the exec's audit_log.entry", func() bool { return len(rc.received()) == 1 })
	var env api.WebhookEnvelope
	mustUnmarshal(t, rc.received()[0].body, &env)
	if env.Event != api.EventAuditLogEntry || !strings.Contains(string(rc.received()[0].body), "echo after") {
		t.Errorf("delivery: %s", rc.received()[0].body)
	}
}

// TestWebhookReplicasSubscribeElsewhere: an account execs on server B,
// subscribes on server A, and B's very next exec queues the event (a
// store several servers share is read on every exec).
func TestWebhookReplicasSubscribeElsewhere(t *testing.T) {
	es, _ := newReplicas(t, 2, webhookConfig())
	a, b := es[0], es[1]
	sb := b.create(b.KeyA, api.CreateSandboxRequest{})
	b.exec(b.KeyA, sb.ID, "echo before")
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	hook := subscribe(t, a, a.KeyA, rc.URL, api.EventAuditLogEntry)
	b.exec(b.KeyA, sb.ID, "echo after")
	if ds := deliveries(t, a, a.KeyA, hook.ID); len(ds) != 1 {
		t.Fatalf("deliveries right after B's exec: %+v, want one", ds)
	}
	eventually(t, "the exec's audit_log.entry", func() bool { return len(rc.received()) == 1 })
}
