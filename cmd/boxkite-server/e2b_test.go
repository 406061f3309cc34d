package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem"
	"github.com/boxkite/boxkite/server/e2b/envdpb/filesystem/filesystemconnect"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process/processconnect"
)

// e2bSDKEnv names a directory with node_modules holding e2b 2.51.0 and
// @e2b/code-interpreter 2.8.0 (.ci/run installs them). Without it the E2B
// tests are skipped, except in CI, where that is a failure.
const e2bSDKEnv = "BOXKITE_TEST_E2B_SDK"

func e2bSDK(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(e2bSDKEnv)
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; .ci/run installs the E2B SDK", e2bSDKEnv)
		}
		t.Skipf("%s is not set", e2bSDKEnv)
	}
	for pkg, want := range map[string]string{"e2b": "2.51.0", "@e2b/code-interpreter": "2.8.0"} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		if err != nil {
			t.Fatalf("%s: %v", e2bSDKEnv, err)
		}
		var v struct{ Version string }
		if err := json.Unmarshal(b, &v); err != nil || v.Version != want {
			t.Fatalf("%s has %s %q, want %s", e2bSDKEnv, pkg, v.Version, want)
		}
	}
	return dir
}

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
	key := server.NewAPIKey()
	p := startServer(t, stateDir, key)
	ctx := context.Background()
	var tok api.TokenResponse
	if _, err := call(ctx, p.base, "", "POST", "/v1/auth/signup", api.Credentials{Email: "other@example.com", Password: "correct horse battery staple"}, &tok); err != nil {
		t.Fatalf("sign up a second account: %v", err)
	}
	var created api.APIKeyCreated
	if _, err := call(ctx, p.base, tok.AccessToken, "POST", "/v1/api-keys", api.CreateAPIKeyRequest{Name: "other"}, &created); err != nil {
		t.Fatalf("create the second account's key: %v", err)
	}
	return &e2bServer{serverProcess: p, key: key, otherKey: created.Key}
}

// flowChecks are the checks flows.mjs must report, one per flow of
// issue 21's first acceptance item (and the SDK's view of the second).
var flowChecks = []string{
	"create", "run.stdout", "run.stderr", "run.exitCode", "run.CommandExitError", "run.timeoutMs",
	"background.pid", "commands.list", "commands.connect", "commands.kill", "kill.ends", "kill.unknown",
	"disconnect.keeps-running", "stdin",
	"files.write-read-text", "files.binary-5MiB", "files.list", "files.exists", "files.getInfo", "files.rename",
	"files.makeDir", "files.list-depth", "files.remove", "files.read-missing", "files.uploadUrl", "files.downloadUrl",
	"files.signedUrl-forged", "files.watchDir",
	"pty.echo", "pty.resize", "list.metadata", "list.metadata-none", "getInfo", "connect.new-process",
	"tenant.getInfo", "tenant.connect", "tenant.setTimeout", "tenant.kill", "tenant.list",
	"setTimeout.expires", "runCode.state", "runCode.stdout", "runCode.error", "runCode.contexts",
	"kill", "kill.NotFoundError", "kill.commands-fail",
}

// TestE2BSDK (issue 21, acceptance 1 to 3) runs the real e2b and
// @e2b/code-interpreter SDKs against boxkite-server with the local
// driver, through every flow of flows.mjs; then checks that what they did
// is in the audit log as the TUI reads it (client.Log, tui.Source's).
func TestE2BSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	sdk := e2bSDK(t)
	srv := startE2BServer(t)

	// ESM resolves packages from the script's directory upwards.
	run := t.TempDir()
	for _, f := range []string{"flows.mjs", "connect.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "e2b", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(run, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "flows.mjs")
	cmd.Dir = run
	cmd.Env = append(os.Environ(), "E2B_API_URL="+srv.base, "E2B_SANDBOX_URL="+srv.base, "E2B_API_KEY="+srv.key,
		"OTHER_API_KEY="+srv.otherKey, "RUN_ID="+fmt.Sprint(time.Now().UnixNano()), "E2B_DOMAIN=boxkite.invalid")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("flows.mjs:\n%s%s", out, stderr.String())
	if err != nil {
		t.Fatalf("flows.mjs: %v\nserver log:\n%s", err, srv.out.String())
	}
	var passed []string
	var results struct{ SandboxID, CodeSandboxID string }
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "ok "); ok {
			passed = append(passed, name)
		} else if strings.HasPrefix(sc.Text(), "{") {
			if err := json.Unmarshal(sc.Bytes(), &results); err != nil {
				t.Fatalf("summary line: %v", err)
			}
		}
	}
	for _, want := range flowChecks {
		if !slices.Contains(passed, want) {
			t.Errorf("flows.mjs did not pass %s", want)
		}
	}

	// Acceptance 3: the flows are in the audit log, chained, as the TUI
	// reads them.
	c := client.New(srv.base, srv.key)
	ops := auditedOps(t, c, results.SandboxID)
	for _, want := range []string{"exec", "file_upload", "file_download", "stat", "ls", "make_dir", "move", "remove", "watch"} {
		if ops[want] == 0 {
			t.Errorf("sandbox %s: no %s entry in the audit log (have %v)", results.SandboxID, want, ops)
		}
	}
	if ops := auditedOps(t, c, results.CodeSandboxID); ops["interpreter_exec"] < 4 {
		t.Errorf("code interpreter sandbox: %d interpreter_exec entries, want at least 4 (have %v)", ops["interpreter_exec"], ops)
	}
}

// auditedOps reads a sandbox's whole audit log with the TUI's call,
// verifies its chain, checks every entry says it came through E2B, and
// counts the operations.
func auditedOps(t *testing.T, c *client.Client, id string) map[string]int {
	t.Helper()
	var entries []api.LogEntry
	var page *api.LogPage
	for {
		var err error
		if page, err = c.Log(context.Background(), id, 500, len(entries)); err != nil {
			t.Fatalf("audit log of %s: %v", id, err)
		}
		entries = append(entries, page.Entries...)
		if len(page.Entries) == 0 || len(entries) >= page.Total {
			break
		}
	}
	page.Entries = entries
	if err := api.VerifyLog(page.Entries, page.HeadSeq, page.HeadHash); err != nil {
		t.Errorf("audit log of %s does not verify: %v", id, err)
	}
	ops := map[string]int{}
	for _, e := range page.Entries {
		ops[e.Operation]++
		var d struct{ Interface string }
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.Interface != "e2b" {
			t.Errorf("entry %s (%s) does not say it came through e2b: %s", e.ID, e.Operation, e.Detail)
		}
	}
	return ops
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
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
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
		routes := []struct{ method, path, body string }{
			{"GET", "/sandboxes/{id}", ""},
			{"POST", "/sandboxes/{id}/timeout", `{"timeout":60}`},
			{"POST", "/sandboxes/{id}/refreshes", `{"duration":60}`},
			{"POST", "/v2/sandboxes/{id}/connect", `{"timeout":60}`},
			{"POST", "/sandboxes/{id}/connect", `{}`},
			{"POST", "/sandboxes/{id}/resume", `{}`},
			{"POST", "/sandboxes/{id}/pause", `{}`},
			{"GET", "/sandboxes/{id}/metrics", ""},
			{"PUT", "/sandboxes/{id}/network", `{}`},
			{"DELETE", "/sandboxes/{id}", ""},
		}
		for _, auth := range []http.Header{{"X-API-Key": {srv.otherKey}}, {"Authorization": {"Bearer " + srv.otherKey}}} {
			for _, rt := range routes {
				status, body := e2bDo(t, srv.base, rt.method, strings.ReplaceAll(rt.path, "{id}", idA), auth, rt.body)
				var e struct{ Code int }
				if status != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Code != http.StatusNotFound {
					t.Errorf("%s %s as another account: %d %s, want 404 with code 404", rt.method, rt.path, status, body)
				}
			}
		}
		status, body := e2bDo(t, srv.base, "GET", "/v2/sandboxes", http.Header{"X-API-Key": {srv.otherKey}}, "")
		if status != http.StatusOK || strings.Contains(string(body), idA) {
			t.Errorf("the other account's list: %d %s", status, body)
		}
		if status, body := e2bDo(t, srv.base, "GET", "/sandboxes/"+idA, http.Header{"X-API-Key": {srv.key}}, ""); status != http.StatusOK {
			t.Errorf("the owner's get after the other's attempts: %d %s", status, body)
		}
	})

	t.Run("envd, missing or foreign token", func(t *testing.T) {
		bad := map[string]http.Header{
			"no token":             {},
			"another sandbox's":    {"X-Access-Token": {tokB}},
			"another's as traffic": {"E2b-Traffic-Access-Token": {tokB}},
		}
		for _, route := range envdRoutes() {
			for name, hdr := range bad {
				h := hdr.Clone()
				h.Set("E2b-Sandbox-Id", idA)
				h.Set("E2b-Sandbox-Port", route.port)
				for k, v := range route.header {
					h[k] = v
				}
				status, body := e2bDo(t, srv.base, route.method, route.path, h, route.body)
				if status != http.StatusUnauthorized || !strings.Contains(string(body), "unauthenticated") {
					t.Errorf("%s %s (port %s) with %s token: %d %s, want 401 unauthenticated", route.method, route.path, route.port, name, status, body)
				}
			}
		}
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

type envdRoute struct {
	method, path, port, body string
	header                   http.Header
}

// envdRoutes is every route of envd and the code interpreter: each RPC of
// both services, from their descriptors, and the HTTP routes.
func envdRoutes() []envdRoute {
	var routes []envdRoute
	for _, fd := range []protoreflect.FileDescriptor{process.File_process_process_proto, filesystem.File_filesystem_filesystem_proto} {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				r := envdRoute{
					method: "POST", path: "/" + string(svc.FullName()) + "/" + string(m.Name()), port: "49983", body: "{}",
					header: http.Header{"Content-Type": {"application/json"}, "Connect-Protocol-Version": {"1"}},
				}
				if m.IsStreamingClient() || m.IsStreamingServer() {
					r.header.Set("Content-Type", "application/connect+json")
					r.body = string(envelope([]byte("{}")))
				}
				routes = append(routes, r)
			}
		}
	}
	return append(routes,
		envdRoute{method: "GET", path: "/health", port: "49983"},
		envdRoute{method: "GET", path: "/files?path=/workspace/x", port: "49983"},
		envdRoute{method: "POST", path: "/files?path=/workspace/x", port: "49983", body: "x", header: http.Header{"Content-Type": {"application/octet-stream"}}},
		envdRoute{method: "GET", path: "/files?path=/workspace/x&signature=v1_forged", port: "49983"},
		envdRoute{method: "POST", path: "/execute", port: "49999", body: `{"code":"1"}`},
		envdRoute{method: "GET", path: "/contexts", port: "49999"},
		envdRoute{method: "POST", path: "/contexts", port: "49999", body: `{}`},
		envdRoute{method: "DELETE", path: "/contexts/x", port: "49999"},
		envdRoute{method: "POST", path: "/contexts/x/restart", port: "49999"},
		envdRoute{method: "GET", path: "/health", port: "49999"},
	)
}

// envelope frames msg as one Connect stream message.
func envelope(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
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
