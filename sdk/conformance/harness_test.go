package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/objtest"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
	"github.com/boxkite/boxkite/server/storagesync"
)

// servers is what one runner talks to: a real control plane with the
// local driver (main), one that reports an old release (old), and a
// loopback proxy to main that refuses some requests first (flaky: see
// flakyRefusals), and a web server that is not boxkite (html: a proxy's
// 502 page). Runners reach main through a recorder, which checks
// their traffic against /openapi.json.
type servers struct {
	main, old *servertest.Server
	rec       *recorder // in front of main: what runners call
	flakyURL  string
	htmlURL   string // not boxkite: a proxy's 502 page (case not_boxkite), a static site's 200 page at /v1/volumes (not_boxkite_200)
	mu        sync.Mutex
	flakySeen map[string]int // requests the flaky proxy got, by "METHOD path"
	// The flaky proxy cuts the first watch stream after its first event
	// (cutAfter, that event's id); resumed are the Last-Event-IDs of the
	// watch requests that followed.
	cutAfter string
	resumed  []string
}

// oldVersion is a release older than every SDK's MIN_SERVER_VERSION.
const oldVersion = "0.0.1"

// flakyRefusal is how the flaky proxy answers a route: the first times
// requests (0: every one) get status with the error code and details,
// and Retry-After: 1.
type flakyRefusal struct {
	times   int
	status  int
	code    string
	details map[string]any
}

// flakyRefusals are the flaky proxy's routes (cases retry_after,
// retry_503 and no_retry_performed): a 429 and a 503 of work not done are
// retried after Retry-After; a 503 of work done (only its audit entry
// failed) must not be sent again.
func flakyRefusals() map[string]flakyRefusal {
	return map[string]flakyRefusal{
		"GET /v1/sandboxes": {times: 1, status: http.StatusTooManyRequests, code: api.CodeRateLimited},
		"GET /v1/volumes": {
			times: 1, status: http.StatusServiceUnavailable, code: api.CodeHostCapacity,
			details: map[string]any{"resource": "threads", "performed": false},
		},
		"GET /v1/usage": {
			status: http.StatusServiceUnavailable, code: api.CodeAuditUnavailable,
			details: map[string]any{"reason": "test", "performed": true},
		},
	}
}

func startServers(t *testing.T) *servers {
	t.Helper()
	// Main syncs workspaces to fake-gcs-server, run in this process (the
	// storage cases).
	obj := objtest.Start(t, "gcs")
	backend, err := storagesync.Open(context.Background(), obj.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := &servers{
		// Webhooks may reach 127.0.0.1 (the cases subscribe a closed
		// loopback port, so nothing leaves the machine).
		main: servertest.New(t, servertest.WithImages(t.TempDir()),
			servertest.WithConfig(server.Config{
				Webhooks: server.WebhookConfig{AllowLoopback: true},
				Storage:  server.StorageConfig{Backend: backend, Prefix: "conformance"},
			})),
		old:       servertest.New(t, servertest.WithConfig(server.Config{Version: oldVersion})),
		flakySeen: map[string]int{},
	}
	s.rec = newRecorder(t, s.main.BaseURL)
	target, err := url.Parse(s.main.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	refusals := flakyRefusals()
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		s.mu.Lock()
		s.flakySeen[key]++
		n := s.flakySeen[key]
		s.mu.Unlock()
		if watchPath.MatchString(r.URL.Path) {
			s.flakyWatch(w, r, proxy)
			return
		}
		if r.URL.Path == cutStreamPath {
			cutProcessStream(w)
			return
		}
		if f, ok := refusals[key]; ok && (f.times == 0 || n <= f.times) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(api.HeaderRetryAfter, "1")
			w.WriteHeader(f.status)
			_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: &api.Error{
				Code: f.code, Message: "refused by the conformance proxy", Hint: "wait for Retry-After", Details: f.details,
			}})
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	s.flakyURL = flaky.URL
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/v1/images" {
			// Another web server's plain 200 (case not_boxkite_200_text).
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "OK\n")
			return
		}
		if strings.HasSuffix(r.URL.Path, "/exec") || strings.HasSuffix(r.URL.Path, "/watch") {
			// Another server's plain 200 where a stream belongs (cases
			// not_boxkite_exec_stream, not_boxkite_log_follow).
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "OK\n")
			return
		}
		if strings.HasSuffix(r.URL.Path, "/stream") || strings.HasSuffix(r.URL.Path, "/logs") || strings.HasSuffix(r.URL.Path, "/files/raw") {
			// A static site's page where a process's events, an image's
			// build log or a file belong (cases not_boxkite_process_stream,
			// not_boxkite_image_logs, not_boxkite_download).
			_, _ = io.WriteString(w, "<!doctype html><html><body><div id=\"app\"></div></body></html>\n")
			return
		}
		if strings.HasSuffix(r.URL.Path, "/pty-exec") || strings.HasSuffix(r.URL.Path, "/takeover-token") || strings.Contains(r.URL.Path, "/takeover-recordings/") {
			// A login page answering 200 to a terminal's calls (cases
			// not_boxkite_pty_exec, not_boxkite_takeover_token,
			// not_boxkite_takeover_recording).
			_, _ = io.WriteString(w, "<!doctype html><html><body><form action=\"/login\"></form></body></html>\n")
			return
		}
		if r.URL.Path == "/v1/volumes" {
			// A static site's page, 200 to any path (case not_boxkite_200).
			_, _ = io.WriteString(w, "<!doctype html><html><body><div id=\"app\"></div></body></html>\n")
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>\n")
	}))
	t.Cleanup(html.Close)
	s.htmlURL = html.URL
	return s
}

// watchPath is a sandbox's audit log stream.
var watchPath = regexp.MustCompile(`^/v1/sandboxes/[^/]+/watch$`)

// cutStreamPath is a process stream the flaky proxy answers itself
// (case process_stream_error_event): one output event, then the error
// event of a scrubbed stream cut at an event over its cap, as the
// control plane sends it (scrub.SSE), and an exit event no client may
// read past the error to.
const cutStreamPath = "/v1/sandboxes/sb-cut/processes/p1/stream"

func cutProcessStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []api.ProcessEvent{
		{Type: api.ProcessEventOutput, StdoutChunk: "before\n", NextOffset: 7},
		{Type: api.ProcessEventError, Error: api.Errorf(http.StatusBadGateway, api.CodeSandboxFailed,
			"the sandbox's process stream had an event of more than 832 KiB; the rest of it was dropped").
			WithHint("stream again with ?since_offset= the last output event's next_offset")},
		{Type: api.ProcessEventExit, Status: api.ProcessExited},
	} {
		b, _ := json.Marshal(ev)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
	}
}

// flakyWatch passes the first watch stream through until its first event,
// then breaks the connection mid-stream (case log_follow_reconnect): the
// SDK must open it again with Last-Event-ID and lose nothing. Later
// streams pass whole.
func (s *servers) flakyWatch(w http.ResponseWriter, r *http.Request, proxy http.Handler) {
	s.mu.Lock()
	first := s.cutAfter == ""
	if !first {
		s.resumed = append(s.resumed, r.Header.Get("Last-Event-ID"))
	}
	s.mu.Unlock()
	if !first {
		proxy.ServeHTTP(w, r)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, s.main.BaseURL+r.URL.RequestURI(), nil)
	if err != nil {
		panic(err)
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	var event []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		event = append(event, line...)
		if id, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			s.mu.Lock()
			s.cutAfter = string(bytes.TrimSpace(id))
			s.mu.Unlock()
		}
		if len(bytes.TrimSpace(line)) == 0 && s.cutAfterSet() {
			break
		}
	}
	_, _ = w.Write(event)
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler) // the connection breaks mid-stream
}

func (s *servers) cutAfterSet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cutAfter != ""
}

// flakyCount is how many requests the flaky proxy got for "METHOD path".
func (s *servers) flakyCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flakySeen[key]
}

// env is what a runner's environment adds: the servers and the key.
func (s *servers) env() []string {
	return []string{
		"BOXKITE_BASE_URL=" + s.rec.URL,
		"BOXKITE_API_KEY=" + s.main.APIKey,
		"BOXKITE_CONFORMANCE_OLD_URL=" + s.old.BaseURL,
		"BOXKITE_CONFORMANCE_FLAKY_URL=" + s.flakyURL,
		"BOXKITE_CONFORMANCE_HTML_URL=" + s.htmlURL,
		// No runner may read a developer's ~/.boxkite.
		"BOXKITE_HOME=" + filepath.Join(os.TempDir(), "boxkite-conformance-none"),
	}
}

// ci reports whether a missing toolchain fails the test instead of skipping it.
func ci() bool { return os.Getenv("CI") != "" }

// need skips (or under CI fails) when a toolchain is missing.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if ci() {
		t.Fatalf("%s: %v (CI installs it: see .ci/run)", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// sdkDir is sdk/<name> from this package's directory.
func sdkDir(t *testing.T, name string) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pythonCmd is Debian's python3, which the SDK is tested with.
func pythonCmd(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("python3")
	need(t, "python3", err)
	return p
}

// buildTypeScript compiles sdk/typescript (tsc, from its node_modules,
// which .ci/run links to a cache) and returns its directory.
func buildTypeScript(t *testing.T) string {
	t.Helper()
	dir := sdkDir(t, "typescript")
	_, err := exec.LookPath("node")
	need(t, "node", err)
	tsc := filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")
	_, err = os.Stat(tsc)
	need(t, "the TypeScript SDK's node_modules (npm ci in sdk/typescript)", err)
	if out, err := tsBuild(); err != nil {
		t.Fatalf("build sdk/typescript: %v\n%s", err, out)
	}
	return dir
}

// tsBuild compiles sdk/typescript (node_modules/typescript/bin/tsc) once
// per test process: tsc takes half a minute on a loaded 2-core machine,
// and three tests need the build.
var tsBuild = sync.OnceValues(func() ([]byte, error) {
	cmd := exec.Command("node", filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
	cmd.Dir = filepath.Join("..", "typescript")
	return cmd.CombinedOutput()
})

// cargoArgs are the flags that build sdk/rust offline from Debian's
// packaged crates (librust-*-dev), as .ci/run installs them.
func cargoArgs(t *testing.T) []string {
	t.Helper()
	_, err := exec.LookPath("cargo")
	need(t, "cargo", err)
	reg := os.Getenv("BOXKITE_CARGO_REGISTRY")
	if reg == "" {
		reg = "/usr/share/cargo/registry"
	}
	_, err = os.Stat(filepath.Join(reg, "ureq-2.6.2"))
	need(t, "Debian's packaged crates (apt-get install librust-ureq-dev librust-serde-json-dev)", err)
	return []string{
		"--offline", "--quiet",
		"--config", `source.crates-io.replace-with="debian"`,
		"--config", fmt.Sprintf("source.debian.directory=%q", reg),
	}
}

// rustEnv keeps cargo's build output out of the tree, in a cache that
// later runs reuse.
func rustEnv(env []string) []string {
	target := os.Getenv("CARGO_TARGET_DIR")
	if target == "" {
		home, _ := os.UserHomeDir()
		target = filepath.Join(home, ".cache", "boxkite-sdk-rust", "target")
	}
	return append(env, "CARGO_TARGET_DIR="+target)
}

// runnerCommand is the command that runs the suite at cases with one SDK.
func runnerCommand(t *testing.T, sdk, cases string) *exec.Cmd {
	t.Helper()
	var cmd *exec.Cmd
	switch sdk {
	case "python":
		dir := sdkDir(t, "python")
		cmd = exec.Command(pythonCmd(t), filepath.Join(dir, "tests", "conformance_runner.py"), cases)
		cmd.Dir = dir
	case "typescript":
		dir := buildTypeScript(t)
		cmd = exec.Command("node", filepath.Join(dir, "test", "conformance-runner.mjs"), cases)
		cmd.Dir = dir
	case "rust":
		dir := sdkDir(t, "rust")
		args := append([]string{"run"}, cargoArgs(t)...)
		cmd = exec.Command("cargo", append(args, "--example", "conformance", "--", cases)...)
		cmd.Dir = dir
		cmd.Env = rustEnv(os.Environ())
	default:
		t.Fatalf("no runner for %s", sdk)
	}
	return cmd
}

// runSubprocess runs a runner with env added to its environment and
// returns its stdout lines.
func runSubprocess(t *testing.T, cmd *exec.Cmd, env []string) [][]byte {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	var lines [][]byte
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("runner stderr:\n%s", stderr.String())
	}
	return lines
}
