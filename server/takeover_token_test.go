package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/takeover"
)

const testBastionKey = "bastion-key-for-tests-0123456789abcdef"

func mintToken(t *testing.T, e *env, id, key string, req any) (int, api.TakeoverToken, []byte) {
	t.Helper()
	resp, body := e.do("POST", sandboxPath(id, "/takeover-token"), key, req)
	var tok api.TakeoverToken
	if resp.StatusCode == http.StatusOK {
		mustUnmarshal(t, body, &tok)
	}
	return resp.StatusCode, tok, body
}

func TestTakeoverToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	attached := fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	other := e.create(e.KeyA, api.CreateSandboxRequest{})
	member := e.addKey(e.AcctA, model.RoleMember)

	if code, _, body := mintToken(t, e, sb.ID, member, nil); code != http.StatusForbidden {
		t.Errorf("member mint = %d %s, want 403", code, body)
	}
	if code, _, _ := mintToken(t, e, sb.ID, e.KeyB, nil); code != http.StatusNotFound {
		t.Errorf("other account's mint = %d, want 404", code)
	}
	code, tok, body := mintToken(t, e, sb.ID, e.KeyA, nil)
	if code != http.StatusOK || tok.ReadOnly || !tok.ExpiresAt.After(time.Now().Add(20*time.Second)) {
		t.Fatalf("mint = %d %s", code, body)
	}
	// Bound to its sandbox.
	if _, resp, err := dialTakeover(t, e, other.ID, "", "?token="+tok.Token); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token on another sandbox: %v %v, want 401", resp, err)
	}
	// The binding is checked before the token is spent, so it still works here.
	conn, _, err := dialTakeover(t, e, sb.ID, "", "?token="+tok.Token)
	if err != nil {
		t.Fatalf("dial with token: %v", err)
	}
	<-attached
	conn.CloseNow()
	if _, resp, err := dialTakeover(t, e, sb.ID, "", "?token="+tok.Token); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("token reused: %v %v, want 401", resp, err)
	}

	// The key as ?api_key=, as /openapi.json documents the route (security
	// apiKeyQuery), for browsers' WebSockets, which cannot send a header.
	for _, c := range []struct {
		name, id, key string
		want          int
	}{
		{"admin key", sb.ID, e.KeyA, http.StatusSwitchingProtocols},
		{"unknown key", sb.ID, "bxk_live_wrong", http.StatusUnauthorized},
		{"member key", sb.ID, member, http.StatusForbidden},
		{"another account's key", sb.ID, e.KeyB, http.StatusNotFound},
		{"a takeover token", sb.ID, "eyJ.x.y", http.StatusUnauthorized},
	} {
		conn, resp, err := dialTakeover(t, e, c.id, "", "?api_key="+c.key)
		if resp == nil || resp.StatusCode != c.want {
			t.Errorf("?api_key= %s: %v, want %d", c.name, err, c.want)
		}
		if err == nil {
			<-attached
			conn.CloseNow()
		}
	}

	// Read-only stays read-only, and cannot run commands.
	_, ro, _ := mintToken(t, e, sb.ID, e.KeyA, api.TakeoverTokenRequest{ReadOnly: true})
	conn, _, err = dialTakeover(t, e, sb.ID, "", "?token="+ro.Token)
	if err != nil {
		t.Fatalf("dial read-only: %v", err)
	}
	if q := <-attached; q != "read_only=1" {
		t.Errorf("read-only token: sidecar query %q", q)
	}
	conn.CloseNow()
	_, ro, _ = mintToken(t, e, sb.ID, e.KeyA, api.TakeoverTokenRequest{ReadOnly: true})
	if resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), ro.Token, api.ExecRequest{Command: "true"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only exec = %d %s, want 403", resp.StatusCode, body)
	}

	// Expired.
	_, tok, _ = mintToken(t, e, sb.ID, e.KeyA, nil)
	e.clock.Advance(api.TakeoverTokenTTL)
	if _, resp, err := dialTakeover(t, e, sb.ID, "", "?token="+tok.Token); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired token: %v %v, want 401", resp, err)
	}
	// An access-token-shaped or garbled token.
	if _, resp, err := dialTakeover(t, e, sb.ID, "", "?token=eyJ.x.y"); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("garbled token: %v %v, want 401", resp, err)
	}
	// A mistyped API key on exec (which takes takeover tokens too) is a bad
	// API key, not a bad takeover token.
	for _, key := range []string{"bxk_live_wrong", "not-a-key"} {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), key, api.ExecRequest{Command: "true"})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"code":"invalid_api_key"`) {
			t.Errorf("exec with key %q = %d %s, want 401 invalid_api_key", key, resp.StatusCode, body)
		}
	}
}

func TestBastionToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{BastionKey: testBastionKey})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	const pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq3dYQ1Tn8cmDV5dTlpK1PZiW8rKOQU/2wKdcZxVh3x laptop"
	member := e.addKey(e.AcctA, model.RoleMember)
	if resp, body := e.do("POST", "/v1/account/ssh-keys", member, api.AddSSHKeyRequest{PublicKey: pub}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("member adds an ssh key: %d %s, want 403", resp.StatusCode, body)
	}
	req := api.BastionTokenRequest{SandboxID: sb.ID, PublicKey: pub}
	if resp, _ := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, req); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unregistered key: %d, want 404", resp.StatusCode)
	}
	if resp, body := e.do("POST", "/v1/account/ssh-keys", e.KeyA, api.AddSSHKeyRequest{PublicKey: pub}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("add ssh key: %d %s", resp.StatusCode, body)
	}
	for _, bad := range []string{"", e.KeyA, testBastionKey + "x"} {
		if resp, _ := e.do("POST", "/v1/bastion/takeover-token", bad, req); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("bastion key %q: %d, want 401", bad, resp.StatusCode)
		}
	}
	resp, body := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bastion token: %d %s", resp.StatusCode, body)
	}
	sbB := e.create(e.KeyB, api.CreateSandboxRequest{})
	if resp, _ := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, api.BastionTokenRequest{SandboxID: sbB.ID, PublicKey: pub}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another account's sandbox: %d, want 404", resp.StatusCode)
	}

	// A takeover token as the password: spent, and exchanged for a fresh one.
	_, tok, _ := mintToken(t, e, sb.ID, e.KeyA, api.TakeoverTokenRequest{ReadOnly: true})
	ex := api.BastionTokenRequest{SandboxID: sb.ID, Token: tok.Token}
	resp, body = e.do("POST", "/v1/bastion/takeover-token", testBastionKey, ex)
	var fresh api.TakeoverToken
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exchange: %d %s", resp.StatusCode, body)
	}
	if mustUnmarshal(t, body, &fresh); !fresh.ReadOnly || fresh.Token == tok.Token {
		t.Errorf("exchanged token = %+v, want a new read-only one", fresh)
	}
	if resp, _ := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, ex); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("exchange twice: %d, want 401", resp.StatusCode)
	}
}

func TestTakeoverRecording(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{TakeoverRecording: true})
	fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	conn, _, err := dialTakeover(t, e, sb.ID, e.KeyA, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ctx := t.Context()
	for _, f := range []struct {
		typ  websocket.MessageType
		data string
	}{{websocket.MessageText, `{"type":"resize","cols":100,"rows":30}`}, {websocket.MessageBinary, "ls\r"}} {
		if err := conn.Write(ctx, f.typ, []byte(f.data)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")
	entries := logEntries(t, e, sb.ID, 3)
	var end struct {
		RecordingID        string `json:"recording_id"`
		RecordingBytes     int    `json:"recording_bytes"`
		RecordingTruncated bool   `json:"recording_truncated"`
	}
	mustUnmarshal(t, entries[2].Detail, &end)
	if end.RecordingID == "" || end.RecordingBytes == 0 || end.RecordingTruncated {
		t.Fatalf("takeover_end detail = %s, want a recording", entries[2].Detail)
	}
	// Still there after the sandbox is gone.
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do("GET", sandboxPath(sb.ID, "/takeover-recordings/"+end.RecordingID), e.KeyA, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != takeover.ContentTypeAsciicast || len(body) != end.RecordingBytes {
		t.Fatalf("recording: %d %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	var hdr struct{ Version, Width, Height int }
	mustUnmarshal(t, []byte(lines[0]), &hdr)
	if hdr.Version != 2 || len(lines) != 3 {
		t.Fatalf("recording = %q, want a v2 header and 2 events", body)
	}
	var events [][]any
	for _, l := range lines[1:] {
		var ev []any
		mustUnmarshal(t, []byte(l), &ev)
		events = append(events, ev[1:])
	}
	// The fake sidecar's answer to the resize is a text frame: not output.
	want := [][]any{{"r", "100x30"}, {"o", "out:ls\r"}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if resp, _ := e.do("GET", sandboxPath(sb.ID, "/takeover-recordings/"+end.RecordingID), e.KeyB, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another account's recording: %d, want 404", resp.StatusCode)
	}
}

// TestTakeoverInputFlushedWhileOpen: typed bytes reach the audit log on
// the flush interval, before the person leaves.
func TestTakeoverInputFlushedWhileOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{TakeoverFlushInterval: 10 * time.Millisecond})
	fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	conn, _, err := dialTakeover(t, e, sb.ID, e.KeyA, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	for _, s := range []string{"one\r", "two\r"} {
		if err := conn.Write(t.Context(), websocket.MessageBinary, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var typed strings.Builder
	eventually(t, "typed input in the log", func() bool {
		typed.Reset()
		_, body := e.do("GET", sandboxPath(sb.ID, "/log?limit=500"), e.KeyA, nil)
		var page api.LogPage
		mustUnmarshal(t, body, &page)
		for _, en := range page.Entries {
			if en.Operation == "takeover_end" {
				t.Fatal("the takeover ended while open")
			}
			if en.Operation == "takeover_input" {
				var d struct{ Input string }
				mustUnmarshal(t, en.Detail, &d)
				typed.WriteString(d.Input)
			}
		}
		return typed.String() == "one\rtwo\r"
	})
}

// TestInteractiveAPIKeyQuery: the interactive exec WebSocket takes the key
// as ?api_key= (documented as apiKeyQuery, for browsers' WebSockets) and
// judges it as it judges the header: the same answer for every key, and
// the key never reaches the sidecar.
func TestInteractiveAPIKeyQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	started := make(chan string, 10)
	e.Sidecar.Route("GET /exec/interactive", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		started <- r.URL.RawQuery
		c.Close(websocket.StatusNormalClosure, "")
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	member := e.addKey(e.AcctA, model.RoleMember)
	_, ro, _ := mintToken(t, e, sb.ID, e.KeyA, api.TakeoverTokenRequest{ReadOnly: true})
	dial := func(key string, inQuery bool) (*websocket.Conn, *http.Response, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		q := api.InteractiveRequest{Command: "true"}.Query()
		hdr := http.Header{}
		if inQuery {
			q.Set("api_key", key)
		} else {
			hdr.Set("Authorization", "Bearer "+key)
		}
		u := "ws" + strings.TrimPrefix(e.URL, "http") + sandboxPath(sb.ID, "/exec/interactive") + "?" + q.Encode()
		return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
	}
	for _, c := range []struct {
		name, key string
		want      int
	}{
		{"admin key", e.KeyA, http.StatusSwitchingProtocols},
		{"member key", member, http.StatusSwitchingProtocols},
		{"unknown key", "bxk_live_wrong", http.StatusUnauthorized},
		{"another account's key", e.KeyB, http.StatusNotFound},
		{"not a key", "not-a-key", http.StatusUnauthorized},
		// ?api_key= takes a key only: a takeover token there is refused.
		{"a read-only takeover token", ro.Token, http.StatusUnauthorized},
	} {
		for _, inQuery := range []bool{false, true} {
			if c.name == "a read-only takeover token" && !inQuery {
				continue // the header takes takeover tokens (403 read-only: TestInteractiveRefusals)
			}
			conn, resp, err := dial(c.key, inQuery)
			if resp == nil || resp.StatusCode != c.want {
				t.Errorf("%s (in the query %v): %v, want %d", c.name, inQuery, err, c.want)
			}
			if err != nil {
				continue
			}
			q := <-started
			if strings.Contains(q, "api_key") || strings.Contains(q, c.key) {
				t.Errorf("%s: the sidecar was sent the key: %q", c.name, q)
			}
			conn.CloseNow()
		}
	}
}
