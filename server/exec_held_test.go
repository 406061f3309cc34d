package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/exec"
)

// heldEnv is an env whose fake sidecar holds the command "block" until
// release is closed; entered has a value once it started.
func heldEnv(t *testing.T, cfg server.Config) (e *env, entered chan struct{}, release chan struct{}) {
	t.Helper()
	e = newEnv(t, cfg)
	entered, release = make(chan struct{}, 1), make(chan struct{})
	e.Sidecar.ExecFunc = func(w http.ResponseWriter, r *http.Request, req api.ExecRequest) {
		if req.Command == "block" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(60 * time.Second): // a hang guard only
			}
		}
		if strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON) {
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			enc := json.NewEncoder(w)
			_ = enc.Encode(api.ExecEvent{Type: api.EventStdout, Data: req.Command + "\n"})
			_ = enc.Encode(api.ExecEvent{Type: api.EventExit, ExitCode: 0, DurationMS: 1})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"exit_code":0,"stdout":"` + req.Command + `\n","stderr":"","duration_ms":1}`))
	}
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return e, entered, release
}

// startBlocked runs the exec "block" for key in sb and returns where its
// status comes once it is answered; it has reached the sidecar (and so
// holds its reservation) when this returns.
func startBlocked(t *testing.T, e *env, entered chan struct{}, key, sbID string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", e.URL+sandboxPath(sbID, "/exec"), strings.NewReader(`{"command":"block"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the blocked exec never reached the sidecar")
	}
	return done
}

func execStatus(t *testing.T, e *env, key, sbID string, header ...string) (int, []byte) {
	t.Helper()
	resp, body := e.do("POST", sandboxPath(sbID, "/exec"), key, map[string]any{"command": "echo ok"}, header...)
	return resp.StatusCode, body
}

// One account's JSON execs hold at most their share of the held-output
// budget: past it an exec is refused with 429 before it runs, another
// account's and a streamed exec still run, and the share comes back when
// the held exec has answered.
func TestExecHeldOutputPerAccount(t *testing.T) {
	t.Parallel()
	bound := exec.HeldBound(api.DefaultExecOutput)
	e, entered, release := heldEnv(t, server.Config{HeldOutputBytes: 3 * bound, HeldOutputAccountBytes: bound})
	sbA := e.create(e.KeyA, api.CreateSandboxRequest{})
	sbB := e.create(e.KeyB, api.CreateSandboxRequest{})
	done := startBlocked(t, e, entered, e.KeyA, sbA.ID)

	status, body := execStatus(t, e, e.KeyA, sbA.ID)
	if status != http.StatusTooManyRequests {
		t.Fatalf("a second JSON exec of the account: %d %s, want 429", status, body)
	}
	ae := apiError(t, body)
	d, _ := ae.Details.(map[string]any)
	if ae.Code != api.CodeLimitExceeded || d["resource"] != api.HeldOutput || d["limit"] != float64(bound) ||
		d["used"] != float64(bound) || d["requested"] != float64(bound) {
		t.Errorf("refusal = %+v, want limit_exceeded, resource held_output, used = limit = requested = %d", ae, bound)
	}
	if !strings.Contains(ae.Hint, api.ContentTypeNDJSON) || !strings.Contains(ae.Hint, "max_output_bytes") {
		t.Errorf("hint %q names neither the streamed exec nor max_output_bytes", ae.Hint)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 1 {
		t.Errorf("the sidecar got %d execs, want 1: the refused one must not run", len(reqs))
	}
	if status, body := execStatus(t, e, e.KeyA, sbA.ID, "Accept", api.ContentTypeNDJSON); status != http.StatusOK {
		t.Errorf("a streamed exec holds nothing and is not limited: %d %s", status, body)
	}
	if status, body := execStatus(t, e, e.KeyB, sbB.ID); status != http.StatusOK {
		t.Errorf("another account's JSON exec: %d %s", status, body)
	}

	close(release)
	if got := <-done; got != http.StatusOK {
		t.Fatalf("the held exec answered %d", got)
	}
	if status, body := execStatus(t, e, e.KeyA, sbA.ID); status != http.StatusOK {
		t.Errorf("after the held exec answered, its share came back: %d %s", status, body)
	}
}

// The server's whole budget spent, a JSON exec of any account is refused
// with 503 host_capacity (resource held_output) before it runs.
func TestExecHeldOutputServerWide(t *testing.T) {
	t.Parallel()
	bound := exec.HeldBound(api.DefaultExecOutput)
	e, entered, release := heldEnv(t, server.Config{HeldOutputBytes: bound, HeldOutputAccountBytes: bound})
	sbA := e.create(e.KeyA, api.CreateSandboxRequest{})
	sbB := e.create(e.KeyB, api.CreateSandboxRequest{})
	done := startBlocked(t, e, entered, e.KeyA, sbA.ID)

	status, body := execStatus(t, e, e.KeyB, sbB.ID)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("a JSON exec with the budget spent: %d %s, want 503", status, body)
	}
	ae := apiError(t, body)
	d, _ := ae.Details.(map[string]any)
	if ae.Code != api.CodeHostCapacity || d["resource"] != api.HeldOutput || d["limit"] != float64(bound) || d["used"] != float64(bound) {
		t.Errorf("refusal = %+v, want host_capacity, resource held_output, used = limit = %d", ae, bound)
	}
	if !strings.Contains(ae.Hint, api.ContentTypeNDJSON) {
		t.Errorf("hint %q does not name the streamed exec", ae.Hint)
	}
	// An exec that could never fit is refused the same way.
	resp, body := e.do("POST", sandboxPath(sbB.ID, "/exec"), e.KeyB, map[string]any{"command": "x", "max_output_bytes": 2 * api.DefaultExecOutput})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("an exec larger than the account's share: %d %s, want 429", resp.StatusCode, body)
	}
	if status, body := execStatus(t, e, e.KeyB, sbB.ID, "Accept", api.ContentTypeNDJSON); status != http.StatusOK || !bytes.Contains(body, []byte("echo ok")) {
		t.Errorf("a streamed exec: %d %s", status, body)
	}

	close(release)
	if got := <-done; got != http.StatusOK {
		t.Fatalf("the held exec answered %d", got)
	}
	if status, body := execStatus(t, e, e.KeyB, sbB.ID); status != http.StatusOK {
		t.Errorf("after the held exec answered, the budget came back: %d %s", status, body)
	}
}
