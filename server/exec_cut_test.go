package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestExecStreamCutEndsWithErrorEvent: a streamed exec whose sidecar
// stream breaks off mid-line ends with an error event on a line of its
// own, not a cut connection (issue 19 finding 7): sandbox_lost when the
// sidecar no longer answers, sandbox_operation_failed when only the
// connection broke. The exec is audited without an exit code.
func TestExecStreamCutEndsWithErrorEvent(t *testing.T) {
	tests := []struct {
		name       string
		sidecarDie bool
		wantCode   string
	}{
		{"the sidecar died", true, api.CodeSandboxLost},
		{"the connection broke", false, api.CodeSandboxFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, server.Config{})
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			e.Sidecar.ExecFunc = func(w http.ResponseWriter, _ *http.Request, _ api.ExecRequest) {
				w.Header().Set("Content-Type", api.ContentTypeNDJSON)
				io.WriteString(w, `{"type":"stdout","data":"before\n"}`+"\n"+`{"type":"stdout","data":"hal`)
				http.NewResponseController(w).Flush()
				if tt.sidecarDie {
					e.Sidecar.Listener.Close()
					e.Sidecar.CloseClientConnections()
					return
				}
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			}
			req, _ := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"talk"}`))
			req.Header.Set("Authorization", "Bearer "+e.KeyA)
			req.Header.Set("Accept", api.ContentTypeNDJSON)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var events []api.ExecEvent
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var ev api.ExecEvent
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("line %q is not a JSON event: %v", sc.Text(), err)
				}
				events = append(events, ev)
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("the stream was cut instead of ended: %v (events so far %+v)", err, events)
			}
			if len(events) != 2 || events[0].Data != "before\n" || events[1].Type != api.EventError || events[1].Error == nil {
				t.Fatalf("events %+v, want the whole output line then an error event", events)
			}
			if got := events[1].Error; got.Code != tt.wantCode || got.Hint == "" || got.RequestID != resp.Header.Get("X-Request-ID") {
				t.Errorf("error event %+v, want code %s with a hint and the request id", got, tt.wantCode)
			}
			entries := logEntries(t, e, sb.ID, 1)
			var detail map[string]any
			mustUnmarshal(t, entries[0].Detail, &detail)
			if entries[0].ExitCode != nil || detail["error"] != tt.wantCode {
				t.Errorf("audit entry: exit %v detail %v, want no exit code and error %s", entries[0].ExitCode, detail, tt.wantCode)
			}
		})
	}
}

// TestExecStreamCutByPause: a streamed exec in flight when its sandbox is
// paused ends with a sandbox_paused error event (with the hint to resume),
// as a JSON exec is answered, not with sandbox_lost's "create a new one"
// (a frozen sidecar does not answer its health check) nor a broken
// connection's 502 (session 20, state20: `boxkite exec -- sh -c 'sleep
// 10'` during `boxkite session pause` said the sandbox was lost).
func TestExecStreamCutByPause(t *testing.T) {
	e := newEnv(t, server.Config{})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, _ api.ExecRequest) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		io.WriteString(w, `{"type":"stdout","data":"before\n"}`+"\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // runs until the pause cuts it
	}
	req, _ := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"sleep 10"}`))
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), "before") {
		t.Fatalf("first line %q (%v), want the command's output", sc.Text(), sc.Err())
	}
	if r, body := e.do("POST", sandboxPath(sb.ID)+"/pause", e.KeyA, api.PauseSandboxRequest{}); r.StatusCode != http.StatusOK {
		t.Fatalf("pause: %d %s", r.StatusCode, body)
	}
	var events []api.ExecEvent
	for sc.Scan() {
		var ev api.ExecEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q is not a JSON event: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the stream was cut instead of ended: %v (events %+v)", err, events)
	}
	if len(events) != 1 || events[0].Type != api.EventError || events[0].Error == nil {
		t.Fatalf("events after the pause %+v, want one error event", events)
	}
	got := events[0].Error
	if got.Code != api.CodeSandboxPaused || !strings.Contains(got.Hint, "resume") || got.RequestID != resp.Header.Get("X-Request-ID") {
		t.Errorf("error event %+v, want %s with a hint to resume and the request id", got, api.CodeSandboxPaused)
	}
	// Both were committed before their answers ended: the exec's and the
	// pause's.
	for _, en := range logEntries(t, e, sb.ID, 2) {
		if en.Operation != "exec" {
			continue
		}
		var detail map[string]any
		mustUnmarshal(t, en.Detail, &detail)
		if en.ExitCode != nil || detail["error"] != api.CodeSandboxPaused {
			t.Errorf("audit entry: exit %v detail %v, want no exit code and error %s", en.ExitCode, detail, api.CodeSandboxPaused)
		}
		return
	}
	t.Error("no exec entry in the log")
}
