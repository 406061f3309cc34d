package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// gatedStore holds every audit append until the test opens the gate.
type gatedStore struct {
	model.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) AppendExecLog(ctx context.Context, e *model.ExecLogEntry) error {
	g.entered <- struct{}{}
	<-g.gate
	return g.Store.AppendExecLog(ctx, e)
}

// TestExecResultFollowsAuditEntry: a client has an exec's result (or a
// stream's exit event) only once its audit entry is committed, so a
// crash cannot leave an exec the client saw out of the log. Output
// still streams before that.
func TestExecResultFollowsAuditEntry(t *testing.T) {
	gs := &gatedStore{Store: openStore(t, t.TempDir()), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	e := newEnvWithStore(t, server.Config{}, gs)
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, req api.ExecRequest) {
		if !strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 3, Stdout: "out\n"})
			return
		}
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		enc := json.NewEncoder(w)
		enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: "early\n"})
		w.(http.Flusher).Flush()
		enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: 3, DurationMS: 1})
	}
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})

	t.Run("json", func(t *testing.T) {
		done := make(chan int, 1)
		go func() {
			resp, _ := e.do("POST", sandboxPath(sb.ID, "/exec"), e.KeyA, api.ExecRequest{Command: "x"})
			done <- resp.StatusCode
		}()
		<-gs.entered
		select {
		case code := <-done:
			gs.gate <- struct{}{}
			t.Fatalf("the client had the result (%d) before the audit entry was written", code)
		case <-time.After(100 * time.Millisecond):
		}
		gs.gate <- struct{}{}
		if code := <-done; code != http.StatusOK {
			t.Errorf("exec = %d, want 200", code)
		}
	})

	t.Run("stream", func(t *testing.T) {
		req, err := http.NewRequest("POST", e.URL+sandboxPath(sb.ID, "/exec"), strings.NewReader(`{"command":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		req.Header.Set("Accept", api.ContentTypeNDJSON)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := make(chan string, 4)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if first := <-lines; !strings.Contains(first, `"stdout"`) {
			t.Fatalf("first line %q, want the output", first)
		}
		<-gs.entered
		select {
		case l := <-lines:
			gs.gate <- struct{}{}
			t.Fatalf("the client had %q before the audit entry was written", l)
		case <-time.After(100 * time.Millisecond):
		}
		gs.gate <- struct{}{}
		var exit api.ExecEvent
		if err := json.Unmarshal([]byte(<-lines), &exit); err != nil || exit.Type != api.EventExit || exit.ExitCode != 3 {
			t.Errorf("last line = %+v (%v), want the exit event", exit, err)
		}
	})
}
