package main

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/e2bsdk"
	"github.com/boxkite/boxkite/internal/e2bsdk/e2btui"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem/filesystemconnect"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process/processconnect"
	"github.com/boxkite/boxkite/server/model"
)

// e2bServer is a boxkite-server for the E2B tests, with a second account.
type e2bServer struct {
	*serverProcess
	key, otherKey string
}

func startE2BServer(t *testing.T) *e2bServer {
	t.Helper()
	stateDir, err := os.MkdirTemp("", "bxk-e2b-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	key := model.NewAPIKey()
	p := startServer(t, stateDir, key)
	return &e2bServer{serverProcess: p, key: key, otherKey: e2bsdk.OtherAccountKey(t, p.base)}
}

// TestE2BSDK (issue 21, acceptance 1 to 3) runs the real e2b and
// @e2b/code-interpreter SDKs against boxkite-server with the local
// driver, through every flow of flows.mjs (internal/e2bsdk); then checks
// that what they did is in the audit log, and shows in boxkite tui.
func TestE2BSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	sdk := e2bsdk.Dir(t)
	srv := startE2BServer(t)
	res := e2bsdk.RunFlows(t, sdk, e2bsdk.Server{Base: srv.base, Key: srv.key, OtherKey: srv.otherKey}, srv.out.String)
	e2bsdk.CheckAudit(t, client.New(srv.base, srv.key), res)
	e2btui.Check(t, client.New(srv.base, srv.key), res)
}

// TestE2BPause (issue 22) runs pause.mjs (internal/e2bsdk) with the real
// e2b SDK against boxkite-server on the local driver: pause with and
// without memory, Sandbox.connect resuming, the paused state in list and
// getInfo, and lifecycle.onTimeout "pause". About 20 s.
func TestE2BPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	sdk := e2bsdk.Dir(t)
	srv := startE2BServer(t)
	e2bsdk.RunPause(t, sdk, e2bsdk.Server{Base: srv.base, Key: srv.key}, srv.out.String, false)

	// The statuses the SDK hides: pause 204 then 409 {code: 409};
	// connect 201 when it resumed, 200 when it was running.
	id, _ := e2bCreate(t, srv.base, srv.key)
	key := http.Header{"X-API-Key": {srv.key}}
	for _, step := range []struct {
		method, path string
		status       int
		body         string // a part of the answer
	}{
		{http.MethodPost, "/sandboxes/" + id + "/pause", http.StatusNoContent, ""},
		{http.MethodPost, "/sandboxes/" + id + "/pause", http.StatusConflict, `"code":409`},
		{http.MethodGet, "/sandboxes/" + id, http.StatusOK, `"state":"paused"`},
		{http.MethodPost, "/v2/sandboxes/" + id + "/connect", http.StatusCreated, `"sandboxID":"` + id + `"`},
		{http.MethodPost, "/v2/sandboxes/" + id + "/connect", http.StatusOK, `"sandboxID":"` + id + `"`},
		{http.MethodGet, "/sandboxes/" + id, http.StatusOK, `"state":"running"`},
	} {
		status, body := e2bDo(t, srv.base, step.method, step.path, key, "{}")
		if status != step.status || !strings.Contains(string(body), step.body) {
			t.Errorf("%s %s: %d %s, want %d with %s", step.method, step.path, status, body, step.status, step.body)
		}
	}
}

// e2bCreate creates a sandbox through the E2B API and returns its id and
// envd access token.
func e2bCreate(t *testing.T, base, key string) (id, token string) {
	t.Helper()
	status, body := e2bDo(t, base, http.MethodPost, "/v2/sandboxes", http.Header{"X-API-Key": {key}}, `{"templateID":"base","timeout":600}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	var sb struct{ SandboxID, EnvdAccessToken string }
	if err := json.Unmarshal(body, &sb); err != nil || sb.SandboxID == "" || sb.EnvdAccessToken == "" {
		t.Fatalf("create answered %s", body)
	}
	return sb.SandboxID, sb.EnvdAccessToken
}

func e2bDo(t *testing.T, base, method, path string, hdr http.Header, body string) (int, []byte) {
	t.Helper()
	return e2bsdk.Do(t, base, method, path, hdr, body)
}

// TestE2BIsolation (issue 21, acceptance 2): another account's key gets
// 404 {code: 404} (the SDK's NotFoundError) from every control-plane
// route on a sandbox; on envd, every RPC of both services and every HTTP
// route refuses a request with no access token, or with another
// sandbox's. The watcher RPCs, which only the Python SDK calls, are
// driven with a Go Connect client.
func TestE2BIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	srv := startE2BServer(t)
	idA, tokA := e2bCreate(t, srv.base, srv.key)
	idB, tokB := e2bCreate(t, srv.base, srv.key)

	t.Run("control plane, other tenant", func(t *testing.T) {
		e2bsdk.CheckOtherTenant(t, srv.base, srv.key, srv.otherKey, idA)
	})

	t.Run("envd, missing or foreign token", func(t *testing.T) {
		_, tokOther := e2bCreate(t, srv.base, srv.otherKey)
		e2bsdk.CheckEnvdRefuses(t, srv.base, idA, map[string]http.Header{
			"another sandbox's token":           {"X-Access-Token": {tokB}},
			"another sandbox's traffic token":   {"E2b-Traffic-Access-Token": {tokB}},
			"another account's sandbox's token": {"X-Access-Token": {tokOther}},
		})
	})

	t.Run("envd watcher RPCs with a Go Connect client", func(t *testing.T) {
		ctx := context.Background()
		fs := filesystemconnect.NewFilesystemClient(http.DefaultClient, srv.base, connect.WithInterceptors(sandboxHeaders(idA, tokA)))
		created, err := fs.CreateWatcher(ctx, connect.NewRequest(&filesystem.CreateWatcherRequest{Path: "/workspace"}))
		if err != nil {
			t.Fatalf("CreateWatcher: %v", err)
		}
		upload(t, srv.base, idA, tokA, "/workspace/watched.txt", "hello")
		var events []*filesystem.FilesystemEvent
		deadline := time.Now().Add(30 * time.Second)
		for !slices.ContainsFunc(events, func(e *filesystem.FilesystemEvent) bool { return e.GetName() == "watched.txt" }) {
			if time.Now().After(deadline) {
				t.Fatalf("no event for watched.txt; got %v", events)
			}
			got, err := fs.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: created.Msg.GetWatcherId()}))
			if err != nil {
				t.Fatalf("GetWatcherEvents: %v", err)
			}
			events = append(events, got.Msg.GetEvents()...)
			time.Sleep(50 * time.Millisecond)
		}
		// Another sandbox's token cannot reach the watcher, nor can the
		// right token on another sandbox.
		foreign := filesystemconnect.NewFilesystemClient(http.DefaultClient, srv.base, connect.WithInterceptors(sandboxHeaders(idB, tokB)))
		if _, err := foreign.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: created.Msg.GetWatcherId()})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GetWatcherEvents from sandbox B: %v, want not_found", err)
		}
		if _, err := fs.RemoveWatcher(ctx, connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: created.Msg.GetWatcherId()})); err != nil {
			t.Fatalf("RemoveWatcher: %v", err)
		}
		if _, err := fs.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: created.Msg.GetWatcherId()})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GetWatcherEvents after RemoveWatcher: %v, want not_found", err)
		}
	})

	t.Run("revoking a key ends the envd tokens it was handed", func(t *testing.T) {
		ctx := context.Background()
		var k2 api.APIKeyCreated
		if _, err := call(ctx, srv.base, srv.key, "POST", "/v1/api-keys", api.CreateAPIKeyRequest{Name: "e2b-second"}, &k2); err != nil {
			t.Fatalf("create a second key: %v", err)
		}
		idC, tokC2 := e2bCreate(t, srv.base, k2.Key)
		// A command started with the second key's token, and a stream on it.
		ps := processconnect.NewProcessClient(http.DefaultClient, srv.base, connect.WithInterceptors(sandboxHeaders(idC, tokC2)))
		stream, err := ps.Start(ctx, connect.NewRequest(&process.StartRequest{
			Process: &process.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", "sleep 600"}},
		}))
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer stream.Close()
		if !stream.Receive() || stream.Msg().GetEvent().GetStart() == nil {
			t.Fatalf("no start event: %v", stream.Err())
		}
		pid := stream.Msg().GetEvent().GetStart().GetPid()
		health := func(tok string) int {
			status, _ := e2bDo(t, srv.base, "GET", "/health", http.Header{"E2b-Sandbox-Id": {idC}, "E2b-Sandbox-Port": {"49983"}, "X-Access-Token": {tok}}, "")
			return status
		}
		if got := health(tokC2); got != http.StatusNoContent {
			t.Fatalf("health with the second key's token: %d", got)
		}
		if _, err := call(ctx, srv.base, srv.key, "DELETE", "/v1/api-keys/"+k2.ID, nil, nil); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		ended := make(chan error, 1)
		go func() {
			for stream.Receive() {
			}
			ended <- stream.Err()
		}()
		select {
		case err := <-ended:
			if err == nil {
				t.Errorf("the stream ended cleanly, want an error")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the stream on the revoked key's token did not end")
		}
		if got := health(tokC2); got != http.StatusUnauthorized {
			t.Errorf("health with the revoked key's token: %d, want 401", got)
		}
		// The first key's token for the same sandbox works, and the
		// command the revoked token started runs on.
		status, body := e2bDo(t, srv.base, "GET", "/sandboxes/"+idC, http.Header{"X-API-Key": {srv.key}}, "")
		var info struct{ EnvdAccessToken string }
		if status != http.StatusOK || json.Unmarshal(body, &info) != nil {
			t.Fatalf("get with the first key: %d %s", status, body)
		}
		if info.EnvdAccessToken == tokC2 || health(info.EnvdAccessToken) != http.StatusNoContent {
			t.Errorf("the first key's token for the sandbox: %q (same as the revoked: %v)", info.EnvdAccessToken, info.EnvdAccessToken == tokC2)
		}
		ps1 := processconnect.NewProcessClient(http.DefaultClient, srv.base, connect.WithInterceptors(sandboxHeaders(idC, info.EnvdAccessToken)))
		list, err := ps1.List(ctx, connect.NewRequest(&process.ListRequest{}))
		if err != nil || !slices.ContainsFunc(list.Msg.GetProcesses(), func(p *process.ProcessInfo) bool { return p.GetPid() == pid }) {
			t.Errorf("List with the first key's token: %v, %v; want pid %d running", list, err, pid)
		}
	})

	t.Run("envd for a killed sandbox answers 502", func(t *testing.T) {
		if status, body := e2bDo(t, srv.base, "DELETE", "/sandboxes/"+idB, http.Header{"X-API-Key": {srv.key}}, ""); status != http.StatusNoContent {
			t.Fatalf("kill: %d %s", status, body)
		}
		h := http.Header{"E2b-Sandbox-Id": {idB}, "E2b-Sandbox-Port": {"49983"}, "X-Access-Token": {tokB}}
		if status, body := e2bDo(t, srv.base, "GET", "/health", h, ""); status != http.StatusBadGateway {
			t.Errorf("health of a killed sandbox: %d %s, want 502", status, body)
		}
		if status, body := e2bDo(t, srv.base, "DELETE", "/sandboxes/"+idB, http.Header{"X-API-Key": {srv.key}}, ""); status != http.StatusNotFound || !strings.Contains(string(body), `"code":404`) {
			t.Errorf("second kill: %d %s, want 404 with code 404", status, body)
		}
	})
}

// sandboxHeaders adds what the E2B SDK sends with every envd call, unary
// and streaming.
func sandboxHeaders(id, token string) connect.Interceptor { return envdHeaders{id, token} }

type envdHeaders struct{ id, token string }

func (e envdHeaders) set(h http.Header) {
	h.Set("E2b-Sandbox-Id", e.id)
	h.Set("E2b-Sandbox-Port", "49983")
	h.Set("X-Access-Token", e.token)
}

func (e envdHeaders) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		e.set(req.Header())
		return next(ctx, req)
	}
}

func (e envdHeaders) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		e.set(conn.RequestHeader())
		return conn
	}
}

func (e envdHeaders) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// upload writes a file through envd's multipart POST /files, as the SDK does.
func upload(t *testing.T, base, id, token, path, content string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreateFormFile("file", path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write([]byte(content))
	_ = mw.Close()
	h := http.Header{"E2b-Sandbox-Id": {id}, "E2b-Sandbox-Port": {"49983"}, "X-Access-Token": {token}, "Content-Type": {mw.FormDataContentType()}}
	if status, body := e2bDo(t, base, "POST", "/files?path="+path, h, buf.String()); status != http.StatusOK {
		t.Fatalf("upload %s: %d %s", path, status, body)
	}
}
