package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestWebhookLimitConcurrent: an account has at most 20 subscriptions
// however its creates interleave. 30 at once made 30 when the handler
// counted the account's subscriptions before the insert, outside it.
func TestWebhookLimitConcurrent(t *testing.T) {
	e := newEnv(t, webhookConfig())
	const n, limit = 30, 20
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, body := e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{
				URL: fmt.Sprintf("http://127.0.0.1:9/hook%d", i), EventTypes: []string{api.EventSandboxCreated},
			})
			codes[i], bodies[i] = resp.StatusCode, string(body)
		})
	}
	wg.Wait()
	created := 0
	for i, code := range codes {
		switch code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("create %d: %d %s", i, code, bodies[i])
		}
	}
	if created != limit {
		t.Errorf("%d of %d concurrent creates succeeded, want %d", created, n, limit)
	}
	resp, body := e.do("GET", "/v1/webhooks", e.KeyA, nil)
	var list []api.Webhook
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK || len(list) != limit {
		t.Errorf("list after the creates: %d, %d subscriptions (%v), want %d", resp.StatusCode, len(list), err, limit)
	}
	resp, body = e.do("POST", "/v1/webhooks", e.KeyA, api.CreateWebhookRequest{URL: "http://127.0.0.1:9/one-more", EventTypes: []string{api.EventSandboxCreated}})
	if e := wantError(t, resp, body, http.StatusTooManyRequests, api.CodeWebhookLimitReached); e.Hint == "" {
		t.Errorf("the limit's error has no hint: %s", body)
	}
	// Another account is not counted against this one.
	if resp, body := e.do("POST", "/v1/webhooks", e.KeyB, api.CreateWebhookRequest{URL: "http://127.0.0.1:9/b", EventTypes: []string{api.EventSandboxCreated}}); resp.StatusCode != http.StatusCreated {
		t.Errorf("account B's first subscription: %d %s", resp.StatusCode, body)
	}
}
