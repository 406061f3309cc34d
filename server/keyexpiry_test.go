package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestAPIKeyExpiry: a key made with expires_in_seconds works until then
// and from then on is refused 401 invalid_api_key with a hint to make a
// new one, on the server's clock; a key made without one has expires_at
// null and keeps working.
func TestAPIKeyExpiry(t *testing.T) {
	e := newEnv(t, server.Config{})
	k := e.newExpiringKey("ci", 3600)
	want := e.clock.Now().Add(time.Hour)
	if k.ExpiresAt == nil || !k.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at = %v, want %v", k.ExpiresAt, want)
	}
	forever := e.newKey(e.KeyA, "forever", api.RoleAdmin)
	if forever.ExpiresAt != nil {
		t.Errorf("a key made without expires_in_seconds: expires_at = %v, want null", forever.ExpiresAt)
	}
	if resp, body := e.do("GET", "/v1/account", k.Key, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("before expiry: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(time.Hour - time.Second)
	if resp, body := e.do("GET", "/v1/account", k.Key, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("a second before expiry: %d %s", resp.StatusCode, body)
	}
	e.clock.Advance(time.Second)
	resp, body := e.do("GET", "/v1/account", k.Key, nil)
	if ae := wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidAPIKey); ae != nil && !strings.Contains(ae.Hint, "keys create") {
		t.Errorf("hint %q does not say how to make a new key", ae.Hint)
	}
	e.clock.Advance(100 * 365 * 24 * time.Hour)
	if resp, body := e.do("GET", "/v1/account", forever.Key, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a key without expiry, a century on: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/v1/api-keys", forever.Key, nil)
	var keys []api.APIKey
	if err := json.Unmarshal(body, &keys); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	listed := map[string]api.APIKey{}
	for _, lk := range keys {
		listed[lk.ID] = lk
	}
	if lk, ok := listed[k.ID]; !ok || lk.ExpiresAt == nil || !lk.ExpiresAt.Equal(want) || !lk.Expired {
		t.Errorf("the expired key is listed as %+v (listed: %v), want expires_at %v and expired", lk, ok, want)
	}
	if lk := listed[forever.ID]; lk.Expired {
		t.Errorf("a key without expiry is listed expired: %+v", lk)
	}
}

// TestAPIKeyListExpired: the list says, by the server's clock, which
// keys have expired: not a key a second before its expiry, a key at it.
func TestAPIKeyListExpired(t *testing.T) {
	e := newEnv(t, server.Config{})
	minute := int64(api.MinKeyExpiresInSeconds)
	k := e.newExpiringKey("brief", minute)
	if k.Expired {
		t.Errorf("a key just made is expired: %+v", k)
	}
	expired := func() bool {
		t.Helper()
		resp, body := e.do("GET", "/v1/api-keys", e.KeyA, nil)
		var keys []api.APIKey
		if err := json.Unmarshal(body, &keys); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("list: %d %s", resp.StatusCode, body)
		}
		for _, lk := range keys {
			if lk.ID == k.ID {
				return lk.Expired
			}
		}
		t.Fatalf("key %s not listed: %s", k.ID, body)
		return false
	}
	e.clock.Advance(time.Duration(minute-1) * time.Second)
	if expired() {
		t.Error("listed expired a second before its expiry")
	}
	e.clock.Advance(time.Second)
	if !expired() {
		t.Error("not listed expired at its expiry")
	}
}

// TestAPIKeyExpiryBounds: expires_in_seconds outside a minute .. a year
// is refused 422 naming the field.
func TestAPIKeyExpiryBounds(t *testing.T) {
	e := newEnv(t, server.Config{})
	for _, s := range []int64{-1, 0, api.MinKeyExpiresInSeconds - 1, api.MaxKeyExpiresInSeconds + 1, 1 << 62} {
		resp, body := e.do("POST", "/v1/api-keys", e.KeyA, api.CreateAPIKeyRequest{Name: "x", ExpiresInSeconds: &s})
		if ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation); ae != nil && ae.Hint == "" {
			t.Errorf("expires_in_seconds %d: no hint", s)
		}
		if !strings.Contains(string(body), "expires_in_seconds") {
			t.Errorf("expires_in_seconds %d: %s does not name the field", s, body)
		}
	}
	for _, s := range []int64{api.MinKeyExpiresInSeconds, api.MaxKeyExpiresInSeconds} {
		resp, body := e.do("POST", "/v1/api-keys", e.KeyA, api.CreateAPIKeyRequest{Name: "x", ExpiresInSeconds: &s})
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("expires_in_seconds %d: %d %s", s, resp.StatusCode, body)
		}
	}
}

// TestKeyExpiryEndsLongPoll: a call still waiting on the sidecar when its
// key expires ends then, as at a revocation, with 401 invalid_api_key,
// saying the key expired (not that it was revoked).
func TestKeyExpiryEndsLongPoll(t *testing.T) {
	e := newEnv(t, server.Config{})
	waiting := make(chan struct{}, 1)
	e.Sidecar.Route("POST /watch", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case waiting <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	minute := int64(api.MinKeyExpiresInSeconds)
	k := e.newExpiringKey("brief", minute)
	// A second of the key's life left, on the server's clock, whose
	// timers fire only when the test moves it: after the call reached the
	// sidecar, however loaded the machine.
	e.clock.holdTimers()
	e.clock.Advance(time.Duration(minute-1) * time.Second)
	type answer struct {
		resp *http.Response
		body []byte
	}
	done := make(chan answer, 1)
	go func() {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/files/watch"), k.Key, api.WatchRequest{Path: "/workspace", TimeoutSeconds: 600})
		done <- answer{resp, body}
	}()
	select {
	case <-waiting:
	case a := <-done:
		t.Fatalf("the long poll ended before it reached the sidecar: %d %s", a.resp.StatusCode, a.body)
	}
	e.clock.Advance(time.Second)
	select {
	case a := <-done:
		if ae := wantError(t, a.resp, a.body, http.StatusUnauthorized, api.CodeInvalidAPIKey); ae != nil &&
			(!strings.Contains(ae.Message, "expired") || !strings.Contains(ae.Hint, "keys create")) {
			t.Errorf("the long poll ended with %q (hint %q); want it to say the key expired and how to make one", ae.Message, ae.Hint)
		}
	case <-time.After(streamEnd):
		t.Fatal("the long poll did not end when its key expired")
	}
}

// TestKeyExpiryOnRecheck: a server that checks the credentials of its
// streams against the store (as when its revocation listener reconnects)
// ends those of a key past its expiry by the server's clock: its watch,
// its streamed exec (told the key expired, not that it was revoked) and a
// terminal opened through a takeover token it minted; a token it minted
// is refused once it has expired. The key's own timer (an hour of real
// time) is not what ends them.
func TestKeyExpiryOnRecheck(t *testing.T) {
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	execRunning := make(chan struct{}, 1)
	// The command runs on after its stream ends (a credential's end loses
	// the output, not the command): the fake sidecar ends it when the test
	// does, before the env's cleanup waits for it (a minute, the call's
	// timeout, otherwise).
	testDone := make(chan struct{})
	t.Cleanup(func() { close(testDone) })
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		w.Write([]byte(`{"type":"stdout","data":"started\n"}` + "\n"))
		w.(http.Flusher).Flush()
		execRunning <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-testDone:
		}
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	k := e.newExpiringKey("brief", 3600)
	watch := openWatch(t, e.URL, sb.ID, k.Key, "")
	execStream := openStream(t, e, "POST", sandboxPath(sb.ID, "/exec"), k.Key, `{"command":"./long-job"}`, "Accept", api.ContentTypeNDJSON)
	<-execRunning
	e.clock.Advance(time.Hour - 15*time.Second) // tokens live 30 s
	mint := func() api.TakeoverToken {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/takeover-token"), k.Key, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("mint token: %d %s", resp.StatusCode, body)
		}
		var tok api.TakeoverToken
		mustUnmarshal(t, body, &tok)
		return tok
	}
	used, spare := mint(), mint()
	term, _, err := dialTakeover(t, e, sb.ID, "", "?token="+used.Token)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer term.CloseNow()

	e.clock.Advance(15 * time.Second)
	e.Server.RecheckCredentials(context.Background())
	waitEnded(t, watch.events)
	out := readAllWithin(t, execStream.Body)
	if !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, api.CodeInvalidAPIKey) || !strings.Contains(out, "expired") {
		t.Errorf("exec stream after its key expired: %q; want an error event saying the key expired", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	_, _, err = term.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "expired") {
		t.Errorf("takeover read after its key expired: %v; want a policy-violation close saying the key expired", err)
	}
	if conn, _, err := dialTakeover(t, e, sb.ID, "", "?token="+spare.Token); err == nil {
		conn.CloseNow()
		t.Error("a takeover token of the expired key still opened the terminal")
	}
}

// newExpiringKey makes an admin key of account A named name that expires
// in seconds.
func (e *env) newExpiringKey(name string, seconds int64) api.APIKeyCreated {
	e.t.Helper()
	resp, body := e.do("POST", "/v1/api-keys", e.KeyA, api.CreateAPIKeyRequest{Name: name, ExpiresInSeconds: &seconds})
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create key %s: %d %s", name, resp.StatusCode, body)
	}
	var k api.APIKeyCreated
	mustUnmarshal(e.t, body, &k)
	return k
}

// TestKeyExpiryEndsTokenTakeover: a terminal opened with a takeover token
// ends when the key that minted the token expires, closed 1008 saying so,
// as one opened with the key itself would.
func TestKeyExpiryEndsTokenTakeover(t *testing.T) {
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	minute := int64(api.MinKeyExpiresInSeconds)
	k := e.newExpiringKey("brief", minute)
	// A second of the key's life left, on the server's clock, whose
	// timers fire only when the test moves it: once the terminal is open,
	// however loaded the machine; the read below then waits for the close.
	e.clock.holdTimers()
	e.clock.Advance(time.Duration(minute-1) * time.Second)
	resp, body := e.do("POST", sandboxPath(sb.ID, "/takeover-token"), k.Key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mint token: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)
	term, _, err := dialTakeover(t, e, sb.ID, "", "?token="+tok.Token)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer term.CloseNow()
	e.clock.Advance(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	for {
		if _, _, err = term.Read(ctx); err != nil {
			break
		}
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "expired") {
		t.Errorf("token takeover at its key's expiry: %v; want a policy-violation close saying the key expired", err)
	}
}
