package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/internal/authz"
)

// streamEnd bounds how long a test waits for a stream to end after its
// key was revoked. It is no measurement (the promise is a second): it
// only stops a broken test from hanging.
const streamEnd = 20 * time.Second

// waitEnded fails the test unless events (a watch stream's) is closed
// before streamEnd, skipping what was still in flight.
func waitEnded(t *testing.T, events <-chan sseEvent) {
	t.Helper()
	timeout := time.After(streamEnd)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end after its key was revoked")
		}
	}
}

// openStream starts a streaming request with key and returns its response.
func openStream(t *testing.T, e *env, method, path, key, body string, header ...string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readAllWithin reads body to its end, failing if that takes past streamEnd.
func readAllWithin(t *testing.T, body io.Reader) string {
	t.Helper()
	out, _ := readAllWithinErr(t, body)
	return out
}

// readAllWithinErr is readAllWithin with the error that ended the read:
// nil when the body ended cleanly, not cut off.
func readAllWithinErr(t *testing.T, body io.Reader) (string, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(body)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return string(r.b), r.err
	case <-time.After(streamEnd):
		t.Fatal("the stream did not end after its key was revoked")
		return "", nil
	}
}

// TestRevocationEndsStreams (issue 17, finding 3): revoking a key ends its
// watch stream, process stream, streamed exec and takeover, and its
// takeover tokens are refused; the exec's command runs on and is audited,
// and another key's streams go on.
func TestRevocationEndsStreams(t *testing.T) {
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	release := make(chan struct{})
	execRunning := make(chan context.Context, 1)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		w.Write([]byte(`{"type":"stdout","data":"started\n"}` + "\n"))
		w.(http.Flusher).Flush()
		execRunning <- r.Context()
		<-release
		w.Write([]byte(`{"type":"stdout","data":"finished\n"}` + "\n" + `{"type":"exit","exit_code":0,"duration_ms":5}` + "\n"))
	}
	e.Sidecar.Route("GET /process/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"tick\\n\",\"next_offset\":5}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the process runs on; only the stream ends
	})
	e.Sidecar.Route("GET /process", func(w http.ResponseWriter, _ *http.Request) {
		replyJSON(w, api.ProcessList{Processes: []api.ProcessInfo{{ProcessID: "proc_1", Status: api.ProcessRunning}}})
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleAdmin)

	watch := openWatch(t, e.URL, sb.ID, doomed.Key, "")
	other := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	procStream := openStream(t, e, "GET", sandboxPath(sb.ID, "/processes/proc_1/stream"), doomed.Key, "")
	execStream := openStream(t, e, "POST", sandboxPath(sb.ID, "/exec"), doomed.Key, `{"command":"./long-job"}`, "Accept", api.ContentTypeNDJSON)
	sidecarCtx := <-execRunning
	term, _, err := dialTakeover(t, e, sb.ID, doomed.Key, "")
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer term.CloseNow()
	resp, body := e.do("POST", sandboxPath(sb.ID, "/takeover-token"), doomed.Key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mint token: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)

	if resp, body := e.do("DELETE", "/v1/api-keys/"+doomed.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}

	waitEnded(t, watch.events)
	// The process stream is told why it ends, as a streamed exec is: an
	// error event the SDKs' stream readers return, not a cut-off body.
	if out, err := readAllWithinErr(t, procStream.Body); err != nil || !strings.HasSuffix(out, "event: error\ndata: {\"type\":\"error\",\"error\":{\"code\":\""+api.CodeInvalidAPIKey+"\",\"message\":\""+authz.ErrStreamRevoked.Message+"\",\"hint\":\""+authz.ErrStreamRevoked.Hint+"\"}}\n\n") {
		t.Errorf("process stream after revocation: %q, %v; want its events, then an invalid_api_key error event, then a clean end", out, err)
	}
	out := readAllWithin(t, execStream.Body)
	if !strings.Contains(out, `"type":"error"`) || !strings.Contains(out, api.CodeInvalidAPIKey) || strings.Contains(out, "finished") {
		t.Errorf("exec stream after revocation: %q; want an error event and nothing more", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	_, _, err = term.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		t.Errorf("takeover read after revocation: %v; want a policy-violation close", err)
	}
	_, _, err = dialTakeover(t, e, sb.ID, "", "?token="+tok.Token)
	if err == nil {
		t.Error("a takeover token of the revoked key still opened the terminal")
	}

	// The exec's command was not stopped: the sidecar's request lives on,
	// and once it ends the exec is in the log, seen by the other watcher.
	if sidecarCtx.Err() != nil {
		t.Error("the sidecar's exec request was cancelled with the stream")
	}
	close(release)
	for {
		entry, _ := other.next(t, streamEnd)
		if entry.Operation == "exec" {
			var d map[string]any
			mustUnmarshal(t, entry.Detail, &d)
			if d["command"] != "./long-job" || entry.ExitCode == nil || *entry.ExitCode != 0 {
				t.Errorf("exec entry %s, exit %v; want the command with exit 0", entry.Detail, entry.ExitCode)
			}
			break
		}
	}
	if resp, body := e.do("GET", sandboxPath(sb.ID, "/processes"), e.KeyA, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "proc_1") {
		t.Errorf("another key's ps: %d %s", resp.StatusCode, body)
	}
}

// TestSSHKeyDeletionEndsSessions: deleting an SSH key ends the terminal it
// opened through the bastion and refuses the tokens minted for it.
func TestSSHKeyDeletionEndsSessions(t *testing.T) {
	e := newEnv(t, server.Config{BastionKey: testBastionKey})
	fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	line, _ := authorizedKey(t, "laptop")
	resp, body := e.do("POST", "/v1/account/ssh-keys", e.KeyA, api.AddSSHKeyRequest{PublicKey: line})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add ssh key: %d %s", resp.StatusCode, body)
	}
	var key api.SSHKey
	mustUnmarshal(t, body, &key)
	mint := func() api.TakeoverToken {
		resp, body := e.do("POST", "/v1/bastion/takeover-token", testBastionKey, api.BastionTokenRequest{SandboxID: sb.ID, PublicKey: line})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bastion token: %d %s", resp.StatusCode, body)
		}
		var tok api.TakeoverToken
		mustUnmarshal(t, body, &tok)
		return tok
	}
	term, _, err := dialTakeover(t, e, sb.ID, "", "?token="+mint().Token)
	if err != nil {
		t.Fatalf("takeover with the ssh key's token: %v", err)
	}
	defer term.CloseNow()
	spare := mint()

	if resp, body := e.do("DELETE", "/v1/account/ssh-keys/"+key.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete ssh key: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamEnd)
	defer cancel()
	_, _, err = term.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation {
		t.Errorf("takeover read after the key's deletion: %v; want a policy-violation close", err)
	}
	resp, body = e.do("POST", sandboxPath(sb.ID, "/exec"), spare.Token, api.ExecRequest{Command: "id"})
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidToken)
}

// TestRevocationAcrossReplicas: a key revoked through one server ends its
// watch stream on another sharing the Postgres database, and a takeover
// token it minted is refused there.
func TestRevocationAcrossReplicas(t *testing.T) {
	rs, _ := newReplicas(t, 2, server.Config{})
	a, b := rs[0], rs[1]
	sb := a.create(a.KeyA, api.CreateSandboxRequest{})
	doomed := a.newKey(a.KeyA, "doomed", api.RoleAdmin)
	watch := openWatch(t, b.URL, sb.ID, doomed.Key, "")
	resp, body := b.do("POST", sandboxPath(sb.ID, "/takeover-token"), doomed.Key, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mint token: %d %s", resp.StatusCode, body)
	}
	var tok api.TakeoverToken
	mustUnmarshal(t, body, &tok)
	// The watch is open once the mint's entry came through it.
	if e, _ := watch.next(t, streamEnd); e.Operation != "takeover_token_mint" {
		t.Fatalf("first watch event %s, want the token's mint", e.Operation)
	}
	if resp, body := a.do("DELETE", "/v1/api-keys/"+doomed.ID, a.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	waitEnded(t, watch.events)
	resp, body = b.do("POST", sandboxPath(sb.ID, "/exec"), tok.Token, api.ExecRequest{Command: "id"})
	wantError(t, resp, body, http.StatusUnauthorized, api.CodeInvalidToken)
}

// TestRevokedKeyStreamsStayOnOthers: what other keys of the account hold
// goes on; a streamed exec of another key is untouched.
func TestRevokedKeyStreamsStayOnOthers(t *testing.T) {
	e := newEnv(t, server.Config{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		for i := range 3 {
			b, _ := json.Marshal(api.ExecEvent{Type: api.EventStdout, Data: fmt.Sprintln("line", i)})
			w.Write(append(b, '\n'))
		}
		w.Write([]byte(`{"type":"exit","exit_code":0,"duration_ms":1}` + "\n"))
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleMember)
	if resp, _ := e.do("DELETE", "/v1/api-keys/"+doomed.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatal("revoke failed")
	}
	stream := openStream(t, e, "POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"x"}`, "Accept", api.ContentTypeNDJSON)
	sc := bufio.NewScanner(stream.Body)
	var last string
	for sc.Scan() {
		last = sc.Text()
	}
	if !strings.Contains(last, `"type":"exit"`) {
		t.Errorf("another key's stream ended with %q, want its exit event", last)
	}
}

// TestRecheckCredentials: revocations a server missed (its listener was
// reconnecting) end the streams they concern once it checks the store.
func TestRecheckCredentials(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleAdmin)
	watch := openWatch(t, e.URL, sb.ID, doomed.Key, "")
	other := openWatch(t, e.URL, sb.ID, e.KeyA, "")
	e.exec(e.KeyA, sb.ID, "echo registered") // both watches are open once they have it
	watch.next(t, streamEnd)
	other.next(t, streamEnd)
	// Revoked behind the server's back, as another server would.
	if err := e.Store.RevokeAPIKey(context.Background(), e.AcctA.ID, doomed.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	e.Server.RecheckCredentials(context.Background())
	waitEnded(t, watch.events)
	e.exec(e.KeyA, sb.ID, "echo still here")
	if got, _ := other.next(t, streamEnd); got.Operation != "exec" {
		t.Errorf("the other key's watch got %+v", got)
	}
}

// TestRevocationDuringJSONExec: a JSON exec whose key is revoked while it
// runs is not stopped; it is audited, and its result is not handed to the
// revoked key.
func TestRevocationDuringJSONExec(t *testing.T) {
	e := newEnv(t, server.Config{})
	running := make(chan context.Context, 1)
	release := make(chan struct{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		running <- r.Context()
		<-release
		replyJSON(w, api.ExecResult{Stdout: "the result\n"})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleAdmin)
	type answer struct {
		resp *http.Response
		body []byte
	}
	done := make(chan answer, 1)
	go func() {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), doomed.Key, api.ExecRequest{Command: "./job"})
		done <- answer{resp, body}
	}()
	sidecarCtx := <-running
	if resp, body := e.do("DELETE", "/v1/api-keys/"+doomed.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if sidecarCtx.Err() != nil {
		t.Error("the sidecar's exec request was cancelled by the revocation")
	}
	close(release)
	a := <-done
	wantError(t, a.resp, a.body, http.StatusUnauthorized, api.CodeInvalidAPIKey)
	if strings.Contains(string(a.body), "the result") {
		t.Errorf("the revoked key got the result: %s", a.body)
	}
	if entry := lastLogEntry(t, e, sb.ID); entry.Operation != "exec" || !strings.Contains(string(entry.Detail), "./job") {
		t.Errorf("last entry %s %s, want the exec", entry.Operation, entry.Detail)
	}
}

// TestRevocationEndsLongPoll: a proxied call still waiting on the sidecar
// (a files/watch long poll) ends at once when its key is revoked, with
// 401 invalid_api_key, not a 500.
func TestRevocationEndsLongPoll(t *testing.T) {
	e := newEnv(t, server.Config{})
	waiting := make(chan struct{}, 1)
	e.Sidecar.Route("POST /watch", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then a closed connection cancels r's context
		select {
		case waiting <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	doomed := e.newKey(e.KeyA, "doomed", api.RoleMember)
	type answer struct {
		resp *http.Response
		body []byte
	}
	done := make(chan answer, 1)
	go func() {
		resp, body := e.do("POST", sandboxPath(sb.ID, "/files/watch"), doomed.Key, api.WatchRequest{Path: "/workspace", TimeoutSeconds: 60})
		done <- answer{resp, body}
	}()
	<-waiting
	if resp, body := e.do("DELETE", "/v1/api-keys/"+doomed.ID, e.KeyA, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	select {
	case a := <-done:
		wantError(t, a.resp, a.body, http.StatusUnauthorized, api.CodeInvalidAPIKey)
	case <-time.After(streamEnd):
		t.Fatal("the long poll did not end after its key was revoked")
	}
}
