package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

func TestExecJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA,
		map[string]any{"command": "echo hi", "stdin": "in", "cwd": "/tmp", "env": map[string]string{"A": "1"}},
		"X-Request-ID", "exec-req-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("exec: %d %s", resp.StatusCode, body)
	}
	var res api.ExecResult
	mustUnmarshal(t, body, &res)
	if res.Stdout != "echo hi\n" || res.ExitCode != 0 {
		t.Errorf("exec result = %+v", res)
	}
	reqs, hdrs := e.Sidecar.Requests()
	want := api.ExecRequest{Command: "echo hi", Timeout: api.DefaultExecTimeout, Stdin: "in", Cwd: "/tmp", Env: map[string]string{"A": "1"}, MaxOutputBytes: api.DefaultExecOutput}
	if diff := cmp.Diff(want, reqs[0]); diff != "" {
		t.Errorf("request the sidecar got (-want +got):\n%s", diff)
	}
	if got := hdrs[0].Get("X-Request-ID"); got != "exec-req-1" {
		t.Errorf("sidecar saw X-Request-ID %q, want the client's", got)
	}
	if got := hdrs[0].Get("Authorization"); got != "" {
		t.Errorf("the client's API key was forwarded to the sidecar: %q", got)
	}

	resp, body = e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"x","timeout":3600}`)
	if resp.StatusCode != 200 {
		t.Fatalf("exec timeout=3600: %d %s", resp.StatusCode, body)
	}
	if reqs, _ := e.Sidecar.Requests(); reqs[1].Timeout != 3600 {
		t.Errorf("sidecar got timeout %d, want 3600", reqs[1].Timeout)
	}
}

func TestExecValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	tests := []struct {
		name string
		body string
	}{
		{"explicit zero timeout", `{"command":"ls","timeout":0}`},
		{"negative timeout", `{"command":"ls","timeout":-1}`},
		{"timeout over max", `{"command":"ls","timeout":3601}`},
		{"missing command", `{"timeout":5}`},
		{"blank command", `{"command":"   "}`},
		{"timeout not a number", `{"command":"ls","timeout":"5s"}`},
		{"negative output cap", `{"command":"ls","max_output_bytes":-1}`},
		{"output cap over the server's maximum", `{"command":"ls","max_output_bytes":16777217}`},
		{"unknown on_output_limit", `{"command":"ls","on_output_limit":"explode"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, tt.body)
			wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
		})
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 0 {
		t.Errorf("invalid execs reached the sidecar: %+v", reqs)
	}
}

// TestExecOutputCapHint: an output cap past the server's maximum is
// refused with a hint naming the range it takes, not only the default
// (boxkite exec --max-output 20M printed "omit it for the default").
func TestExecOutputCapHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "ls", MaxOutputBytes: 20 << 20})
	ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
	for _, want := range []string{"16 MiB", "this server's maximum", "1 MiB"} {
		if !strings.Contains(ae.Hint, want) {
			t.Errorf("hint %q does not name %q", ae.Hint, want)
		}
	}
}

func TestExecInactive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	if resp, body := e.do("DELETE", sandboxPath(sb.ID), e.KeyA, nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "ls"})
	ae := wantError(t, resp, body, http.StatusConflict, api.CodeConflict)
	if ae.Hint == "" {
		t.Error("409 without a hint")
	}
	resp, body = e.do("POST", sandboxPath(model.NewID(), "/exec"), e.KeyA, api.ExecRequest{Command: "ls"})
	wantError(t, resp, body, http.StatusNotFound, api.CodeNotFound)
}

func TestExecSidecarErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	// The sidecar's own error envelope passes through unchanged.
	envelope := `{"error":{"code":"validation_error","message":"env name FOO-BAR is invalid"}}`
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, envelope)
	}
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "ls"})
	if resp.StatusCode != 422 || string(body) != envelope {
		t.Errorf("sidecar error = %d %s, want 422 %s unchanged", resp.StatusCode, body, envelope)
	}

	// A sidecar that does not answer is a 502.
	e.Sidecar.Close()
	resp, body = e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "ls"})
	ae := wantError(t, resp, body, http.StatusBadGateway, api.CodeSandboxFailed)
	if strings.Contains(ae.Message, "127.0.0.1") || strings.Contains(ae.Message, "refused") {
		t.Errorf("502 leaks the transport error: %s", body)
	}
}

// TestExecStreaming proves NDJSON events reach the client while the
// command is still running: the fake sidecar sends the first event, then
// waits until the client has read it before finishing.
func TestExecStreaming(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	clientSaw := make(chan struct{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		if r.Header.Get("Accept") != api.ContentTypeNDJSON {
			t.Errorf("sidecar got Accept %q, want %q", r.Header.Get("Accept"), api.ContentTypeNDJSON)
		}
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		enc := json.NewEncoder(w)
		enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: "first\n"})
		w.(http.Flusher).Flush()
		select {
		case <-clientSaw:
		case <-time.After(30 * time.Second):
			enc.Encode(api.ExecEvent{Type: api.EventStderr, Data: "client never saw the first event\n"})
		}
		enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: 3, DurationMS: 7})
	}
	req, _ := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"slow"}`))
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != api.ContentTypeNDJSON {
		t.Errorf("Content-Type = %q, want %q", ct, api.ContentTypeNDJSON)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []api.ExecEvent
	for sc.Scan() {
		var ev api.ExecEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad NDJSON line %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
		if len(events) == 1 {
			close(clientSaw)
		}
	}
	want := []api.ExecEvent{{Type: api.EventStdout, Data: "first\n"}, {Type: api.EventExit, ExitCode: 3, DurationMS: 7}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestExecNoHiddenCap: the server waits for the sidecar beyond the
// command's own timeout (the sidecar kills the command at the timeout and
// still has to answer), so no server-side limit cuts an exec short.
func TestExecNoHiddenCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, req api.ExecRequest) {
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 0, Stdout: "done"})
	}
	resp, body := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, `{"command":"sleep","timeout":1}`)
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("done")) {
		t.Errorf("slow exec = %d %s", resp.StatusCode, body)
	}
}

// BenchmarkExecProxy measures one exec round trip through the control
// plane (auth, store lookup, proxy) to a fake sidecar.
func BenchmarkExecProxy(b *testing.B) {
	e := newEnv(b, server.Config{RateLimits: server.RateLimits{Ops: -1}}) // b.Loop runs past any per-minute limit
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	body := []byte(`{"command":"true"}`)
	url := e.URL + sandboxPath(sb.ID, "/exec")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	ctx := context.Background()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
