package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// breakableStore fails every audit append with fault while broken is set,
// as a database made read-only (or full) under the server would.
type breakableStore struct {
	model.Store
	broken atomic.Bool
	fault  error
}

func (b *breakableStore) AppendExecLog(ctx context.Context, e *model.ExecLogEntry) error {
	if b.broken.Load() {
		return fmt.Errorf("insert exec log entry: %w: attempt to write a readonly database", b.fault)
	}
	return b.Store.AppendExecLog(ctx, e)
}

// TestAuditFailsClosed: while audit entries cannot be committed, an exec
// that already ran says so (and what it returned), audited work is refused
// before it is performed, /health/ready says why; once the store takes
// writes again the waiting entry is committed, the chain reaches its
// recorded head, and audited work resumes.
func TestAuditFailsClosed(t *testing.T) {
	st := &breakableStore{Store: openStore(t, t.TempDir()), fault: model.ErrStoreReadOnly}
	e := newEnvWithStore(t, server.Config{}, st)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = e.Server.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runDone })
	var files atomic.Int32
	e.Sidecar.Route("POST /file-create", func(w http.ResponseWriter, _ *http.Request) {
		files.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"path":"/workspace/a","size":1}`))
	})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	exec := func(cmd string) (*http.Response, []byte) {
		return e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: cmd})
	}
	if resp, body := exec("echo before"); resp.StatusCode != http.StatusOK {
		t.Fatalf("exec before the fault = %d %s", resp.StatusCode, body)
	}

	st.broken.Store(true)
	// The store broke while this exec ran: it was performed, unrecorded.
	resp, body := exec("echo during")
	ae := wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeAuditUnavailable)
	d, _ := ae.Details.(map[string]any)
	result, _ := d["result"].(map[string]any)
	if d["performed"] != true || d["exit_code"] != 0.0 || result["stdout"] != "echo during\n" || d["reason"] != "the database is read-only" {
		t.Errorf("answer to an exec whose entry failed: %+v", ae)
	}

	// From now on audited work is refused and not performed.
	ran := len(requestsOf(e))
	resp, body = exec("echo refused")
	ae = wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeAuditUnavailable)
	if d, _ := ae.Details.(map[string]any); d["performed"] != false || !strings.Contains(ae.Message, "read-only") || ae.Hint == "" {
		t.Errorf("refusal: %+v", ae)
	}
	resp, body = e.do("POST", sandboxPath(sb.ID, "/files"), e.KeyA, api.FileCreateRequest{Path: "a", Content: "x"})
	wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeAuditUnavailable)
	if n := len(requestsOf(e)); n != ran || files.Load() != 0 {
		t.Errorf("refused work reached the sidecar: %d execs (want %d), %d file creates", n, ran, files.Load())
	}
	resp, body = e.do("GET", "/health/ready", "", nil)
	if ae := wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeAuditUnavailable); !strings.Contains(ae.Message, "read-only") {
		t.Errorf("ready while the audit log is down: %+v", ae)
	}
	// Reads that write no entry still answer.
	if resp, body := e.do("GET", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("get sandbox while the audit log is down = %d %s", resp.StatusCode, body)
	}

	st.broken.Store(false)
	eventually(t, "the server to be ready again", func() bool {
		resp, _ := e.do("GET", "/health/ready", "", nil)
		return resp.StatusCode == http.StatusOK
	})
	if resp, body := exec("echo after"); resp.StatusCode != http.StatusOK {
		t.Fatalf("exec after the store recovered = %d %s", resp.StatusCode, body)
	}
	page := getLog(t, e, sb.ID, "?limit=500")
	var commands []string
	for _, en := range page.Entries {
		var dd struct{ Command string }
		json.Unmarshal(en.Detail, &dd)
		commands = append(commands, dd.Command)
	}
	if want := "echo before,echo during,echo after"; strings.Join(commands, ",") != want {
		t.Errorf("logged commands %q, want %q: the one performed is recorded late, the refused one never", commands, want)
	}
	if err := api.VerifyLog(page.Entries, page.HeadSeq, page.HeadHash); err != nil {
		t.Errorf("VerifyLog: %v", err)
	}
}

// TestAuditFailsClosedStream: a streamed exec whose entry fails ends with
// an error event carrying the exit code, not with the exit event.
func TestAuditFailsClosedStream(t *testing.T) {
	st := &breakableStore{Store: openStore(t, t.TempDir()), fault: model.ErrStoreFull}
	e := newEnvWithStore(t, server.Config{}, st)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		enc := json.NewEncoder(w)
		enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: "out\n"})
		enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: 7, DurationMS: 1})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	st.broken.Store(true)
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "x"}, "Accept", api.ContentTypeNDJSON)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream = %d %s", resp.StatusCode, body)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var last api.ExecEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), `"type":"exit"`) || last.Type != api.EventError || last.Error == nil ||
		last.Error.Code != api.CodeAuditUnavailable || last.Error.RequestID == "" {
		t.Fatalf("stream %s: want output, then an audit_unavailable error event and no exit event", body)
	}
	if d, _ := last.Error.Details.(map[string]any); d["exit_code"] != 7.0 || d["reason"] != "the database's disk is full" {
		t.Errorf("error event details %v", last.Error.Details)
	}
}

func requestsOf(e *env) []api.ExecRequest {
	reqs, _ := e.Sidecar.Requests()
	return reqs
}
