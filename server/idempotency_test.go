package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	idem := func(k string) []string { return []string{api.HeaderIdempotencyKey, k} }

	resp1, body1 := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "once"}, idem("create-1")...)
	if resp1.StatusCode != http.StatusCreated || resp1.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Fatalf("first create = %d (replayed %q) %s", resp1.StatusCode, resp1.Header.Get(api.HeaderIdempotentReplayed), body1)
	}
	resp2, body2 := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "once"}, idem("create-1")...)
	if resp2.StatusCode != http.StatusCreated || string(body2) != string(body1) ||
		resp2.Header.Get(api.HeaderIdempotentReplayed) != "true" || resp2.Header.Get("Content-Type") != "application/json" {
		t.Errorf("repeat = %d %s (replayed %q, type %q); want the first answer replayed",
			resp2.StatusCode, body2, resp2.Header.Get(api.HeaderIdempotentReplayed), resp2.Header.Get("Content-Type"))
	}
	if resp2.Header.Get("X-Request-ID") == resp1.Header.Get("X-Request-ID") {
		t.Errorf("the replay reuses the first request's id")
	}
	if n := len(e.Driver.Created()); n != 1 {
		t.Errorf("driver.Create called %d times, want 1", n)
	}

	// Same key, another body: refused.
	resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "twice"}, idem("create-1")...)
	wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReuse)

	// The scope is (credential, method, path): the same key elsewhere runs.
	var sb api.Sandbox
	mustUnmarshal(t, body1, &sb)
	resp, body = e.do("POST", sandboxPath(sb.ID, "/extend"), e.KeyA, api.ExtendSandboxRequest{LifetimeMinutes: 60}, idem("create-1")...)
	if resp.StatusCode != 200 || resp.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Errorf("same key on another path = %d %s", resp.StatusCode, body)
	}
	otherKey := e.addKey(e.AcctA, model.RoleAdmin)
	// (Another label: "once" is taken by an active sandbox, and labels are unique.)
	resp, body = e.do("POST", "/v1/sandboxes", otherKey, api.CreateSandboxRequest{Label: "once-more"}, idem("create-1")...)
	if resp.StatusCode != 201 || resp.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Errorf("same key with another credential = %d %s, want a new create", resp.StatusCode, body)
	}

	// Error answers below 500 are kept too.
	resp1, _ = e.do("POST", "/v1/sandboxes", e.KeyA, `{"size":"huge"}`, idem("bad-1")...)
	resp2, body2 = e.do("POST", "/v1/sandboxes", e.KeyA, `{"size":"huge"}`, idem("bad-1")...)
	if resp1.StatusCode != 422 || resp2.StatusCode != 422 || resp2.Header.Get(api.HeaderIdempotentReplayed) != "true" ||
		apiError(t, body2).Code != api.CodeValidation {
		t.Errorf("422 then repeat = %d, %d (replayed %q) %s", resp1.StatusCode, resp2.StatusCode, resp2.Header.Get(api.HeaderIdempotentReplayed), body2)
	}

	// A 5xx is forgotten: the retry runs.
	fail := true
	var mu sync.Mutex
	e.Driver.CreateFunc = func(context.Context, model.Spec) (model.Endpoint, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			fail = false
			return model.Endpoint{}, errors.New("substrate hiccup")
		}
		return e.Sidecar.Endpoint(), nil
	}
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, nil, idem("flaky")...)
	wantError(t, resp, body, http.StatusBadGateway, api.CodeSandboxFailed)
	resp, body = e.do("POST", "/v1/sandboxes", e.KeyA, nil, idem("flaky")...)
	if resp.StatusCode != 201 || resp.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Errorf("retry after a 502 = %d %s, want a fresh 201", resp.StatusCode, body)
	}

	// Malformed keys are refused before anything runs.
	for _, k := range []string{strings.Repeat("k", 256), "has space", "tab\tkey"} {
		resp, body := e.do("POST", "/v1/sandboxes", e.KeyA, nil, idem(k)...)
		wantError(t, resp, body, http.StatusBadRequest, api.CodeBadRequest)
	}
}

// TestIdempotencyInProgress: a repeat while the first request runs is 409;
// once it finished, the repeat gets its answer.
func TestIdempotencyInProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, req api.ExecRequest) {
		once.Do(func() { close(arrived) })
		<-release
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.ExecResult{Stdout: req.Command + "\n"})
	}
	hdr := []string{api.HeaderIdempotencyKey, "exec-1"}
	first := make(chan []byte)
	go func() {
		_, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "slow"}, hdr...)
		first <- body
	}()
	<-arrived
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "slow"}, hdr...)
	wantError(t, resp, body, http.StatusConflict, api.CodeIdempotencyKeyInProgress)
	close(release)
	firstBody := <-first
	resp, body = e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "slow"}, hdr...)
	if resp.StatusCode != 200 || string(body) != string(firstBody) || resp.Header.Get(api.HeaderIdempotentReplayed) != "true" {
		t.Errorf("repeat after completion = %d %s, want the first answer %s", resp.StatusCode, body, firstBody)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 1 {
		t.Errorf("the sidecar ran %d execs, want 1", len(reqs))
	}

	// Streamed execs are not deduplicated: their answers are not buffered.
	streamHdr := []string{api.HeaderIdempotencyKey, "stream-1", "Accept", api.ContentTypeNDJSON}
	e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "a"}, streamHdr...)
	resp, _ = e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "a"}, streamHdr...)
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 3 || resp.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Errorf("streamed exec with a key: sidecar ran %d execs in all, replayed %q; want 3 and not replayed",
			len(reqs), resp.Header.Get(api.HeaderIdempotentReplayed))
	}
}

// TestIdempotencyDurable: records live in the store, so a restarted
// server replays them; they expire after 24 hours.
func TestIdempotencyDurable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	hdr := []string{api.HeaderIdempotencyKey, "durable"}
	_, body1 := e.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "d"}, hdr...)

	srv, err := server.New(server.Config{DriverName: "fake"}, e.Store, e.Driver, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetNow(e.clock.Now)
	restarted := *e
	restarted.URL = httptestServer(t, srv)
	resp, body := restarted.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "d"}, hdr...)
	if resp.StatusCode != 201 || string(body) != string(body1) || resp.Header.Get(api.HeaderIdempotentReplayed) != "true" {
		t.Errorf("after a restart = %d %s, want the first answer replayed", resp.StatusCode, body)
	}

	e.clock.Advance(24*time.Hour + time.Second)
	// The first "d" goes, so its label is free again (labels are unique
	// among active sandboxes) and only the key's expiry is under test.
	var first api.Sandbox
	mustUnmarshal(t, body1, &first)
	if resp, body := restarted.do("DELETE", sandboxPath(first.ID), e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete the first sandbox: %d %s", resp.StatusCode, body)
	}
	resp, body = restarted.do("POST", "/v1/sandboxes", e.KeyA, api.CreateSandboxRequest{Label: "d"}, hdr...)
	if resp.StatusCode != 201 || resp.Header.Get(api.HeaderIdempotentReplayed) != "" {
		t.Errorf("after 24 h = %d %s, want a new create", resp.StatusCode, body)
	}
	if n := len(e.Driver.Created()); n != 2 {
		t.Errorf("driver.Create called %d times, want 2", n)
	}
}

// A body over the limit is the same 413 payload_too_large, with its hint,
// with an Idempotency-Key as without one (it was 413 bad_request, no hint).
func TestIdempotencyBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	big := api.FileCreateRequest{Path: "a.txt", Content: strings.Repeat("\n", 9<<20)} // 18 MiB as JSON
	for _, hdr := range [][]string{nil, {api.HeaderIdempotencyKey, "big-1"}} {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/files"), e.KeyA, big, hdr...)
		ae := wantError(t, resp, body, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge)
		if ae.Message != "request body is larger than 16 MiB" || !strings.Contains(ae.Hint, "a newline is 2 bytes") || !strings.Contains(ae.Hint, "files/raw") {
			t.Errorf("headers %v: %s", hdr, body)
		}
	}
}
