package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// sidecarHit is one request the fake sidecar received.
type sidecarHit struct {
	Method, Path, RawQuery string
	Body                   string
	Header                 http.Header
}

// fakeAnswer is what the fake sidecar sends for one method and path.
type fakeAnswer struct {
	status int
	ctype  string
	body   string
}

// recordAll makes the fake sidecar answer every route but /health and
// /exec from answers (keyed "METHOD /path"), recording each request.
func recordAll(t *testing.T, e *env, answers map[string]fakeAnswer) chan sidecarHit {
	hits := make(chan sidecarHit, 100)
	e.Sidecar.Route("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hits <- sidecarHit{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Header.Clone()}
		a, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"no such fake route"}}`)
			return
		}
		w.Header().Set("Content-Type", a.ctype)
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	})
	return hits
}

// proxyCase is one proxied route exercised against the fake sidecar.
type proxyCase struct {
	route       string // "METHOD /path" as in server.ProxyRoutes
	method      string
	path        string // after /v1/sandboxes/{id}, with ids and query
	body        string
	sidecar     string // "METHOD /path?query" the sidecar must see
	answer      fakeAnswer
	op          string         // "" when not audited
	detail      map[string]any // the entry's detail, JSON-decoded
	exitCode    *int
	outputTrunc bool
}

func jsonAnswer(status int, body string) fakeAnswer {
	return fakeAnswer{status, "application/json", body}
}

func intp(i int) *int { return &i }

// Strings that must never reach the audit log.
const (
	secretContent = "SECRET-FILE-CONTENT-4711"
	secretInput   = "SECRET-PROCESS-INPUT-0815"
	secretDoc     = "SECRET-LSP-DOCUMENT-2342"
	secretUpload  = "SECRET-RAW-UPLOAD-1337"
)

func proxyCases() []proxyCase {
	ok := func(body string) fakeAnswer { return jsonAnswer(200, body) }
	return []proxyCase{
		{
			"POST /files", "POST", "/files", `{"path":"a.txt","content":"` + secretContent + `"}`, "POST /file-create",
			ok(`{"path":"/workspace/a.txt","size":24,"created":true}`), "file_create",
			map[string]any{"path": "a.txt", "size": 24.0},
			nil, false,
		},
		{
			"POST /files/view", "POST", "/files/view", `{"path":"a.txt","view_range":[1,2]}`, "POST /view",
			ok(`{"content":"x","lines":1,"is_directory":false,"entries":null}`), "view",
			map[string]any{"path": "a.txt", "view_range": []any{1.0, 2.0}},
			nil, false,
		},
		{
			"POST /files/str-replace", "POST", "/files/str-replace", `{"path":"a.txt","old_str":"` + secretContent + `","new_str":"y","replace_all":true}`, "POST /str-replace",
			ok(`{"path":"/workspace/a.txt","replaced":true,"occurrences":2}`), "str_replace",
			map[string]any{"path": "a.txt", "replace_all": true, "occurrences": 2.0},
			nil, false,
		},
		{
			"POST /files/ls", "POST", "/files/ls", `{"path":"/"}`, "POST /ls",
			ok(`{"entries":[{"path":"/workspace/a"},{"path":"/workspace/b/"}]}`), "ls",
			map[string]any{"path": "/", "entry_count": 2.0},
			nil, false,
		},
		{
			"POST /files/glob", "POST", "/files/glob", `{"pattern":"**/*.go"}`, "POST /glob",
			ok(`{"matches":[{"path":"/workspace/m.go"}]}`), "glob",
			map[string]any{"pattern": "**/*.go", "path": "", "match_count": 1.0},
			nil, false,
		},
		{
			"POST /files/grep", "POST", "/files/grep", `{"pattern":"fo+","path":"src","glob":"*.go","max_matches":9999}`, "POST /grep",
			ok(`{"matches":[{"path":"x","line":1,"text":"foo"}],"truncated":true}`), "grep",
			map[string]any{"pattern": "fo+", "path": "src", "glob": "*.go", "match_count": 1.0, "truncated": true},
			nil, false,
		},
		{
			"POST /files/watch", "POST", "/files/watch", `{"path":"/","recursive":true,"timeout_seconds":1}`, "POST /watch",
			ok(`{"changes":[{"path":"a","event":"created"}],"timed_out":false}`), "watch",
			map[string]any{"path": "/", "recursive": true, "change_count": 1.0},
			nil, false,
		},
		{
			"POST /files/present", "POST", "/files/present", `{"filepaths":["a.txt"]}`, "POST /present-files",
			ok(`{"files":[{"file_path":"/mnt/user-data/outputs/a.txt"}],"copy_operations":[]}`), "present_files",
			map[string]any{"filepaths": []any{"a.txt"}, "file_count": 1.0},
			nil, false,
		},
		{
			"PUT /files/raw", "PUT", "/files/raw?path=%2Fworkspace%2Fb.bin", secretUpload, "PUT /files/raw?path=%2Fworkspace%2Fb.bin",
			ok(`{"path":"/workspace/b.bin","size":22}`), "file_upload",
			map[string]any{"path": "/workspace/b.bin", "bytes": 22.0},
			nil, false,
		},
		{
			"GET /files/raw", "GET", "/files/raw?path=b.bin", "", "GET /files/raw?path=b.bin",
			fakeAnswer{200, "application/octet-stream", "\x00\x01binary"},
			"file_download",
			map[string]any{"path": "b.bin", "bytes": 8.0},
			nil, false,
		},
		{
			"POST /files/archive", "POST", "/files/archive?path=d", "tar bytes", "POST /files/archive?path=d",
			ok(`{"files":1,"bytes":3}`), "archive_upload",
			map[string]any{"path": "d", "bytes": 9.0},
			nil, false,
		},
		{
			"GET /files/archive", "GET", "/files/archive?path=d", "", "GET /files/archive?path=d",
			fakeAnswer{200, "application/x-tar", "tarball"},
			"archive_download",
			map[string]any{"path": "d", "bytes": 7.0},
			nil, false,
		},

		{
			"POST /exec/{exec_id}/signal", "POST", "/exec/3f2a/signal", `{"signal":"SIGINT"}`, "POST /exec/3f2a/signal",
			ok(`{"exec_id":"3f2a","signal":"SIGINT"}`), "exec_signal",
			map[string]any{"exec_id": "3f2a", "signal": "SIGINT"},
			nil, false,
		},
		{
			"POST /processes", "POST", "/processes", `{"command":"sleep 9","max_runtime_seconds":60}`, "POST /process/start",
			jsonAnswer(201, `{"process_id":"proc_1","status":"running","started_at":"2026-01-01T00:00:00Z"}`), "start_process",
			map[string]any{"command": "sleep 9", "max_runtime_seconds": 60.0, "process_id": "proc_1"},
			nil, false,
		},
		{"GET /processes", "GET", "/processes", "", "GET /process", ok(`{"processes":[]}`), "", nil, nil, false},
		{
			"POST /processes/kill-all", "POST", "/processes/kill-all", "", "POST /process/kill-all",
			ok(`{"killed":2}`), "kill_all_processes",
			map[string]any{"killed": 2.0},
			nil, false,
		},
		{
			"GET /processes/{pid}/output", "GET", "/processes/proc_1/output?since_offset=3", "", "GET /process/proc_1/output?since_offset=3",
			ok(`{"status":"running","stdout_chunk":"","next_offset":3,"truncated":false}`), "", nil, nil, false,
		},
		{
			"GET /processes/{pid}/stream", "GET", "/processes/proc_1/stream", "", "GET /process/proc_1/stream",
			fakeAnswer{200, "text/event-stream", "event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\",\"exit_code\":0}\n\n"},
			"", nil, nil, false,
		},
		{
			"POST /processes/{pid}/input", "POST", "/processes/proc_1/input", `{"data":"` + secretInput + `"}`, "POST /process/proc_1/input",
			ok(`{"bytes_written":25}`), "send_process_input",
			map[string]any{"process_id": "proc_1", "bytes_written": 25.0},
			nil, false,
		},
		{
			"POST /processes/{pid}/stop", "POST", "/processes/proc_1/stop", "", "POST /process/proc_1/stop",
			ok(`{"status":"stopped","exit_code":143}`), "stop_process",
			map[string]any{"process_id": "proc_1", "exit_code": 143.0, "status": "stopped"},
			intp(143), false,
		},

		{
			"POST /interpreter/exec", "POST", "/interpreter/exec", `{"code":"print(1)","timeout":5}`, "POST /interpreter/exec",
			ok(`{"stdout":"1\n","result":null,"error":null,"truncated":true}`), "interpreter_exec",
			map[string]any{"code": "print(1)", "code_bytes": 8.0, "timeout": 5.0, "error": false},
			nil, true,
		},
		{
			"POST /interpreter/reset", "POST", "/interpreter/reset", "", "POST /interpreter/reset",
			ok(`{"status":"reset"}`), "interpreter_reset",
			map[string]any{},
			nil, false,
		},
		{"GET /interpreter/status", "GET", "/interpreter/status", "", "GET /interpreter/status", ok(`{"running":false}`), "", nil, nil, false},
		{
			"POST /node-interpreter/exec", "POST", "/node-interpreter/exec", `{"code":"1+1","timeout":5}`, "POST /node-interpreter/exec",
			ok(`{"stdout":"","result":"2","error":null,"truncated":false}`), "node_interpreter_exec",
			map[string]any{"code": "1+1", "code_bytes": 3.0, "timeout": 5.0, "error": false},
			nil, false,
		},
		{
			"POST /node-interpreter/reset", "POST", "/node-interpreter/reset", "", "POST /node-interpreter/reset",
			ok(`{"status":"reset"}`), "node_interpreter_reset",
			map[string]any{},
			nil, false,
		},
		{"GET /node-interpreter/status", "GET", "/node-interpreter/status", "", "GET /node-interpreter/status", ok(`{"running":false}`), "", nil, nil, false},
		{
			// What was typed is counted, never logged.
			"POST /pty-exec", "POST", "/pty-exec", `{"command":"passwd","input_bytes":"aHVudGVyMgo="}`, "POST /pty-exec",
			ok(`{"output":"ok\r\n","exit_code":0,"timed_out":false}`), "pty_exec",
			map[string]any{"command": "passwd", "input_bytes": 8.0, "timed_out": false},
			intp(0), false,
		},
		{
			"POST /browser/navigate", "POST", "/browser/navigate", `{"url":"http://localhost:3000/"}`, "POST /browser/navigate",
			ok(`{"title":"t","url":"http://localhost:3000/","status":200,"error":null}`), "browser_navigate",
			map[string]any{"url": "http://localhost:3000/", "status": 200.0, "error": false},
			nil, false,
		},
		{
			"POST /browser/exec", "POST", "/browser/exec", `{"script":"document.title"}`, "POST /browser/exec",
			ok(`{"result":"t","error":null}`), "browser_exec",
			map[string]any{"script": "document.title", "script_bytes": 14.0, "error": false},
			nil, false,
		},
		{
			"POST /browser/screenshot", "POST", "/browser/screenshot", `{}`, "POST /browser/screenshot",
			ok(`{"image_base64":"iVBORw0KGgo=","error":null}`), "browser_screenshot",
			map[string]any{},
			nil, false,
		},
		{
			"POST /browser/close", "POST", "/browser/close", "", "POST /browser/close",
			ok(`{"status":"closed"}`), "browser_close",
			map[string]any{},
			nil, false,
		},

		{
			"POST /lsp/start", "POST", "/lsp/start", `{"language":"go"}`, "POST /lsp/start",
			jsonAnswer(201, `{"lsp_id":"lsp_1"}`), "lsp_start",
			map[string]any{"language": "go", "lsp_id": "lsp_1"},
			nil, false,
		},
		{
			"POST /lsp/{lsp_id}/open", "POST", "/lsp/lsp_1/open", `{"path":"m.go","content":"` + secretDoc + `"}`, "POST /lsp/lsp_1/open",
			ok(`{"status":"opened"}`), "lsp_open",
			map[string]any{"lsp_id": "lsp_1", "path": "m.go", "content_bytes": 24.0},
			nil, false,
		},
		{
			"POST /lsp/{lsp_id}/completion", "POST", "/lsp/lsp_1/completion", `{"path":"m.go","line":3,"character":4}`, "POST /lsp/lsp_1/completion",
			ok(`{"items":[{"label":"a"},{"label":"b"}]}`), "lsp_completion",
			map[string]any{"lsp_id": "lsp_1", "path": "m.go", "line": 3.0, "character": 4.0, "item_count": 2.0},
			nil, false,
		},
		{
			"POST /lsp/{lsp_id}/stop", "POST", "/lsp/lsp_1/stop", "", "POST /lsp/lsp_1/stop",
			ok(`{"status":"stopped"}`), "lsp_stop",
			map[string]any{"lsp_id": "lsp_1"},
			nil, false,
		},
	}
}

// TestProxyRoutes sends each proxied route through the control plane to a
// fake sidecar: the request reaches the right sidecar path unchanged, the
// answer comes back unchanged, and the audit entry has the operation and
// detail of the reference, file contents and input never among them.
func TestProxyRoutes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnvWithStore(t, server.Config{}, openStore(t, dir))
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	cases := proxyCases()
	answers := map[string]fakeAnswer{}
	var covered []string
	for _, c := range cases {
		answers[strings.SplitN(c.sidecar, "?", 2)[0]] = c.answer
		covered = append(covered, c.route)
	}
	if diff := cmp.Diff(server.ProxyRoutes(), covered); diff != "" {
		t.Fatalf("test cases do not cover the route table (-table +cases):\n%s", diff)
	}
	hits := recordAll(t, e, answers)

	wantEntries := 0
	for _, c := range cases {
		t.Run(c.route, func(t *testing.T) {
			resp, body := e.do(c.method, sandboxPath(sb.ID, c.path), e.KeyA, c.body, "X-Request-ID", "req-"+c.op)
			if resp.StatusCode != c.answer.status || string(body) != c.answer.body {
				t.Errorf("answer = %d %q, want %d %q", resp.StatusCode, body, c.answer.status, c.answer.body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != c.answer.ctype {
				t.Errorf("Content-Type = %q, want %q", ct, c.answer.ctype)
			}
			hit := <-hits
			got := hit.Method + " " + hit.Path
			if hit.RawQuery != "" {
				got += "?" + hit.RawQuery
			}
			if got != c.sidecar || hit.Body != c.body {
				t.Errorf("sidecar got %s %q, want %s %q", got, hit.Body, c.sidecar, c.body)
			}
			if hit.Header.Get(api.HeaderSidecarToken) != e.Sidecar.Token || hit.Header.Get("Authorization") != "" {
				t.Errorf("sidecar headers: token %q, Authorization %q", hit.Header.Get(api.HeaderSidecarToken), hit.Header.Get("Authorization"))
			}
			if c.op == "" {
				return
			}
			wantEntries++
			entries := logEntries(t, e, sb.ID, wantEntries)
			last := entries[len(entries)-1]
			var detail map[string]any
			mustUnmarshal(t, last.Detail, &detail)
			if last.Operation != c.op || last.Source != api.LogSourceAgent || last.SessionID != sb.ID || last.AccountID != e.AcctA.ID {
				t.Errorf("entry = %s/%s for %s/%s", last.Operation, last.Source, last.SessionID, last.AccountID)
			}
			if diff := cmp.Diff(c.detail, detail); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
			if !cmp.Equal(c.exitCode, last.ExitCode) || last.OutputTruncated != c.outputTrunc {
				t.Errorf("exit_code %v output_truncated %v, want %v %v", last.ExitCode, last.OutputTruncated, c.exitCode, c.outputTrunc)
			}
		})
	}
	entries := logEntries(t, e, sb.ID, wantEntries)
	if err := api.VerifyLogChain(api.GenesisHash, entries); err != nil {
		t.Errorf("chain: %v", err)
	}
	assertNotInDB(t, dir, secretContent, secretInput, secretDoc, secretUpload)
}

// logEntries waits until the sandbox's log has want entries and returns them.
// The entry is written after the answer is complete, so it may trail it.
func logEntries(t testing.TB, e *env, id string, want int) []api.LogEntry {
	t.Helper()
	var page api.LogPage
	eventually(t, "audit entries", func() bool {
		resp, body := e.do("GET", sandboxPath(id, "/log?limit=500"), e.KeyA, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET log: %d %s", resp.StatusCode, body)
		}
		mustUnmarshal(t, body, &page)
		return page.Total >= want
	})
	if page.Total != want || len(page.Entries) != want {
		t.Fatalf("log has %d entries (total %d), want %d", len(page.Entries), page.Total, want)
	}
	return page.Entries
}

// assertNotInDB fails if any of the strings is in the database files in
// dir (the main file and its write-ahead log).
func assertNotInDB(t testing.TB, dir string, secrets ...string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.db*"))
	if len(files) == 0 {
		t.Fatalf("no database files in %s", dir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s contains %q", filepath.Base(f), s)
			}
		}
	}
}

// TestProxyScoping: every sandbox route is 404 for another account's
// sandbox and 409 for a destroyed one, and neither reaches the sidecar.
func TestProxyScoping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	hits := recordAll(t, e, nil)
	mine := e.create(e.KeyA, api.CreateSandboxRequest{})
	gone := e.create(e.KeyA, api.CreateSandboxRequest{})
	if resp, body := e.do("DELETE", sandboxPath(gone.ID), e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	routes := append(proxyCases(),
		proxyCase{route: "POST /exec", method: "POST", path: "/exec", body: `{"command":"ls"}`},
		proxyCase{route: "GET /takeover", method: "GET", path: "/takeover"},
	)
	for _, c := range routes {
		t.Run(c.route, func(t *testing.T) {
			resp, body := e.do(c.method, sandboxPath(mine.ID, c.path), e.KeyB, c.body)
			wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
			resp, body = e.do(c.method, sandboxPath(gone.ID, c.path), e.KeyA, c.body)
			wantError(t, resp, body, http.StatusConflict, api.CodeConflict)
			resp, body = e.do(c.method, sandboxPath(mine.ID, c.path), "", c.body)
			wantError(t, resp, body, http.StatusUnauthorized, api.CodeUnauthorized)
		})
	}
	resp, body := e.do("GET", sandboxPath(mine.ID, "/log"), e.KeyB, nil)
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
	if len(hits) != 0 {
		t.Errorf("%d refused requests reached the sidecar", len(hits))
	}
}

// TestProxyEdgeChecks: what the control plane itself refuses.
func TestProxyEdgeChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	hits := recordAll(t, e, nil)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	tests := []struct {
		name, method, path string
		status             int
		code               string
	}{
		{"raw download without path", "GET", "/files/raw", 400, api.CodeBadRequest},
		{"raw upload with empty path", "PUT", "/files/raw?path=", 400, api.CodeBadRequest},
		{"archive without path", "GET", "/files/archive", 400, api.CodeBadRequest},
		{"dot-dot process id", "GET", "/processes/%2E%2E/output", 404, api.CodeNotFound},
		{"process id with a query", "POST", "/processes/a%3Fb/stop", 404, api.CodeNotFound},
		{"lsp id with a slash", "POST", "/lsp/a%2Fb/stop", 404, api.CodeNotFound},
		{"api_key query off streams", "GET", "/processes?api_key=" + e.KeyA, 401, api.CodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := e.KeyA
			if strings.Contains(tt.path, "api_key") {
				key = ""
			}
			resp, body := e.do(tt.method, sandboxPath(sb.ID, tt.path), key, nil)
			wantError(t, resp, body, tt.status, tt.code)
		})
	}
	big := `{"path":"a","content":"` + strings.Repeat("x", 16<<20) + `"}`
	resp, body := e.do("POST", sandboxPath(sb.ID, "/files"), e.KeyA, big)
	wantError(t, resp, body, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge)
	if len(hits) != 0 {
		t.Errorf("%d refused requests reached the sidecar", len(hits))
	}
}

// TestProxySidecarErrors: the sidecar's errors pass through unchanged and
// write no audit entry; an unreachable sidecar is a 502.
func TestProxySidecarErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	envelope := `{"error":{"code":"not_found","message":"File not found: nope.txt"}}`
	budget := `{"error":{"code":"session_budget_exceeded","message":"budget","details":{"reason":"exec_count","limit":1,"used":1}}}`
	recordAll(t, e, map[string]fakeAnswer{
		"POST /view":             jsonAnswer(404, envelope),
		"POST /interpreter/exec": jsonAnswer(403, budget),
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for _, c := range []struct{ path, want string }{{"/files/view", envelope}, {"/interpreter/exec", budget}} {
		resp, body := e.do("POST", sandboxPath(sb.ID, c.path), e.KeyA, `{"path":"nope.txt","code":"1"}`)
		if string(body) != c.want || resp.StatusCode == 200 {
			t.Errorf("%s = %d %s, want the sidecar's %s", c.path, resp.StatusCode, body, c.want)
		}
	}
	e.Sidecar.Close()
	resp, body := e.do("POST", sandboxPath(sb.ID, "/files/ls"), e.KeyA, `{}`)
	wantError(t, resp, body, http.StatusBadGateway, api.CodeSandboxFailed)
	if page := getLog(t, e, sb.ID, ""); page.Total != 0 {
		t.Errorf("failed operations wrote %d audit entries", page.Total)
	}
}

func getLog(t testing.TB, e *env, id, query string) api.LogPage {
	t.Helper()
	resp, body := e.do("GET", sandboxPath(id, "/log"+query), e.KeyA, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET log%s: %d %s", query, resp.StatusCode, body)
	}
	var page api.LogPage
	mustUnmarshal(t, body, &page)
	return page
}

// TestProcessStreamPassesThrough: SSE events reach the client as the
// sidecar sends them (the second is only sent once the client has the
// first), with ?api_key= instead of a header, which is not forwarded.
func TestProcessStreamPassesThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	clientSaw := make(chan struct{})
	gotQuery := make(chan string, 1)
	e.Sidecar.Route("GET /process/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
		gotQuery <- r.URL.RawQuery
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"hi\\n\",\"next_offset\":3}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-clientSaw:
		case <-time.After(30 * time.Second):
			io.WriteString(w, ": client never saw the first event\n\n")
		}
		io.WriteString(w, "event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\",\"exit_code\":0}\n\n")
	})
	resp, err := http.Get(e.URL + sandboxPath(sb.ID, "/processes/proc_1/stream?since_offset=0&api_key="+e.KeyA))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if q := <-gotQuery; q != "since_offset=0" {
		t.Errorf("sidecar query = %q, want since_offset=0 only", q)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, name)
			if name == "output" {
				close(clientSaw)
			}
		}
		if strings.HasPrefix(sc.Text(), ": client never") {
			t.Error("the first event was held back")
		}
	}
	if !slices.Equal(events, []string{"output", "exit"}) {
		t.Errorf("events = %v", events)
	}
}

// TestExecAudit: exec writes {command, timeout} and the exit code, from
// a JSON answer and from the exit event of an NDJSON stream, and, when the
// output was cut, output_truncated and the counts.
func TestExecAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, req api.ExecRequest) {
		if r.Header.Get("Accept") == api.ContentTypeNDJSON {
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			enc := json.NewEncoder(w)
			enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: strings.Repeat("o", 64)})
			enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: 7, ExecOutputInfo: api.ExecOutputInfo{
				Truncated: true, StdoutBytes: 5 << 20, StderrBytes: 2, OutputLimitBytes: 64, StopReason: api.StopReasonOutputLimit,
			}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 3, Stdout: "x"})
	}
	long := strings.Repeat("é", 3000) // 6000 bytes, cut to 2 KiB on a rune boundary
	e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, map[string]any{"command": long, "timeout": 9})
	e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"stream"}`, "Accept", api.ContentTypeNDJSON)
	entries := logEntries(t, e, sb.ID, 2)
	var d0, d1 map[string]any
	mustUnmarshal(t, entries[0].Detail, &d0)
	mustUnmarshal(t, entries[1].Detail, &d1)
	want0 := map[string]any{"command": strings.Repeat("é", 1024), "command_bytes": 6000.0, "timeout": 9.0}
	if diff := cmp.Diff(want0, d0); diff != "" || !cmp.Equal(entries[0].ExitCode, intp(3)) || entries[0].OutputTruncated {
		t.Errorf("JSON exec entry: exit %v truncated %v, detail (-want +got):\n%s", entries[0].ExitCode, entries[0].OutputTruncated, diff)
	}
	want1 := map[string]any{
		"command": "stream", "timeout": float64(api.DefaultExecTimeout),
		"stdout_bytes": float64(5 << 20), "stderr_bytes": 2.0, "output_limit_bytes": 64.0, "stop_reason": api.StopReasonOutputLimit,
	}
	if diff := cmp.Diff(want1, d1); diff != "" || !cmp.Equal(entries[1].ExitCode, intp(7)) || !entries[1].OutputTruncated {
		t.Errorf("streamed exec entry: exit %v truncated %v, detail (-want +got):\n%s", entries[1].ExitCode, entries[1].OutputTruncated, diff)
	}
}

// TestLogPaging: limit and offset page through the chain oldest first.
func TestLogPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for range 7 {
		e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"true"}`)
	}
	all := logEntries(t, e, sb.ID, 7)
	page := getLog(t, e, sb.ID, "?limit=3&offset=5")
	if page.Limit != 3 || page.Offset != 5 || page.Total != 7 || len(page.Entries) != 2 || page.Entries[0].ID != all[5].ID {
		t.Errorf("page = limit %d offset %d total %d, %d entries", page.Limit, page.Offset, page.Total, len(page.Entries))
	}
	if err := api.VerifyLogChain(all[4].RowHash, page.Entries); err != nil {
		t.Errorf("page does not continue the chain: %v", err)
	}
	if def := getLog(t, e, sb.ID, ""); def.Limit != api.DefaultLogLimit || def.Offset != 0 {
		t.Errorf("defaults: limit %d offset %d", def.Limit, def.Offset)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?limit=x", "?offset=-1"} {
		resp, body := e.do("GET", sandboxPath(sb.ID, "/log"+q), e.KeyA, nil)
		wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
	}
	// The log outlives the sandbox.
	e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil)
	if after := getLog(t, e, sb.ID, "?limit=500"); after.Total != 7 {
		t.Errorf("after delete: %d entries", after.Total)
	}
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TestLogEntryShape: the wire form of an entry.
func TestLogEntryShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"true"}`)
	logEntries(t, e, sb.ID, 1)
	_, body := e.do("GET", sandboxPath(sb.ID, "/log"), e.KeyA, nil)
	var raw struct {
		Entries []map[string]any `json:"entries"`
	}
	mustUnmarshal(t, body, &raw)
	var keys []string
	for k := range raw.Entries[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{
		"account_id", "detail", "duration_ms", "exit_code", "id", "operation", "output_truncated",
		"prev_hash", "row_hash", "seq", "session_id", "source", "started_at",
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("entry fields (-want +got):\n%s", diff)
	}
	if raw.Entries[0]["seq"] != 1.0 {
		t.Errorf("seq %v, want 1", raw.Entries[0]["seq"])
	}
	if raw.Entries[0]["prev_hash"] != api.GenesisHash || !hexHash.MatchString(raw.Entries[0]["row_hash"].(string)) {
		t.Errorf("hashes: %v %v", raw.Entries[0]["prev_hash"], raw.Entries[0]["row_hash"])
	}
}
