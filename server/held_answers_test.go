package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/exec"
	"github.com/boxkite/boxkite/server/internal/hold"
)

// heldRoute is a proxied route whose JSON answer the control plane may
// hold whole, and so reserves its bound of the held-output budget.
type heldRoute struct {
	name   string
	method string
	// path is the public route, under the sandbox, for the call named
	// what ("block" is held in the fake sidecar until released).
	path    func(what string) string
	body    func(what string) any
	sidecar string // the fake sidecar's pattern
	// what names the call the fake sidecar was asked for.
	what  func(r *http.Request) string
	bound int64
}

var heldRoutes = []heldRoute{
	{
		name: "interpreter", method: "POST", sidecar: "POST /interpreter/exec", bound: hold.Interpreter,
		path: func(string) string { return "/interpreter/exec" },
		body: func(what string) any { return api.InterpreterExecRequest{Code: what} },
		what: codeOf,
	},
	{
		name: "node interpreter", method: "POST", sidecar: "POST /node-interpreter/exec", bound: hold.Interpreter,
		path: func(string) string { return "/node-interpreter/exec" },
		body: func(what string) any { return api.InterpreterExecRequest{Code: what} },
		what: codeOf,
	},
	{
		name: "process output", method: "GET", sidecar: "GET /process/{pid}/output", bound: hold.ProcessOutput,
		path: func(what string) string { return "/processes/" + what + "/output" },
		body: func(string) any { return nil },
		what: func(r *http.Request) string { return r.PathValue("pid") },
	},
}

func codeOf(r *http.Request) string {
	var req api.InterpreterExecRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	return req.Code
}

// heldRouteEnv is an env whose fake sidecar answers rt, holding the call
// "block" until release is closed; entered has a value once it is held,
// and asked counts the calls by name.
type heldRouteEnv struct {
	*env
	rt      heldRoute
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	asked   map[string]int
}

func newHeldRouteEnv(t *testing.T, rt heldRoute, cfg server.Config) *heldRouteEnv {
	t.Helper()
	h := &heldRouteEnv{env: newEnv(t, cfg), rt: rt, entered: make(chan struct{}, 1), release: make(chan struct{}), asked: map[string]int{}}
	h.Sidecar.Route(rt.sidecar, func(w http.ResponseWriter, r *http.Request) {
		what := rt.what(r)
		h.mu.Lock()
		h.asked[what]++
		h.mu.Unlock()
		if what == "block" {
			h.entered <- struct{}{}
			select {
			case <-h.release:
			case <-time.After(60 * time.Second): // a hang guard only
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if rt.method == "GET" {
			_, _ = w.Write([]byte(`{"status":"running","stdout_chunk":"` + what + `\n","next_offset":6,"truncated":false}`))
			return
		}
		_, _ = w.Write([]byte(`{"stdout":"` + what + `\n","result":null,"error":null,"truncated":false}`))
	})
	t.Cleanup(h.unblock)
	return h
}

func (h *heldRouteEnv) unblock() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func (h *heldRouteEnv) calls(what string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked[what]
}

// call makes the route's call named what as key in sb.
func (h *heldRouteEnv) call(key, sbID, what string) (*http.Response, []byte) {
	return h.do(h.rt.method, sandboxPath(sbID, h.rt.path(what)), key, h.rt.body(what))
}

// hold starts the call "block" as key in sb and returns where its status
// comes once answered; it holds its reservation when this returns.
func (h *heldRouteEnv) hold(t *testing.T, key, sbID string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		resp, _ := h.call(key, sbID, "block")
		done <- resp.StatusCode
	}()
	select {
	case <-h.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the held call never reached the sidecar")
	}
	return done
}

// An interpreter run and a process output page reserve their bound of the
// held-output budget before the sidecar is asked, as a JSON exec does:
// past the account's share the call is refused with 429, past the
// server's with 503 host_capacity, before the sidecar is asked (it never
// sees the refused call); past the account's share another account's
// call passes, past the server's a JSON exec is refused too (one budget);
// and the budget comes back when the held call has answered.
func TestHeldOutputProxiedAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		total        int64 // the server's budget, in bounds of the route; an account's share is one
		status       int   // of a call past it, by A (the account's share) or B (the server's)
		code         string
		otherAccount bool // a second account's call passes while A's holds (else a JSON exec is refused)
	}{
		{"account", 3, http.StatusTooManyRequests, api.CodeLimitExceeded, true},
		{"server", 1, http.StatusServiceUnavailable, api.CodeHostCapacity, false},
	}
	for _, rt := range heldRoutes {
		for _, tc := range cases {
			t.Run(rt.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHeldRouteEnv(t, rt, server.Config{HeldOutputBytes: tc.total * rt.bound, HeldOutputAccountBytes: rt.bound})
				a := h.create(h.KeyA, api.CreateSandboxRequest{})
				b := h.create(h.KeyB, api.CreateSandboxRequest{})
				done := h.hold(t, h.KeyA, a.ID)
				key, sb := h.KeyA, a.ID // who is refused
				if !tc.otherAccount {
					key, sb = h.KeyB, b.ID
				}

				resp, body := h.call(key, sb, "refused")
				ae := wantError(t, resp, body, tc.status, tc.code)
				wantHeldRefusal(t, ae, rt.bound, rt.bound)
				if n := h.calls("refused"); n != 0 {
					t.Errorf("the sidecar was asked for the refused call %d times", n)
				}
				if tc.otherAccount {
					if resp, body := h.call(h.KeyB, b.ID, "other"); resp.StatusCode != http.StatusOK {
						t.Errorf("another account's call while A's share is held: %d %s", resp.StatusCode, body)
					}
				} else {
					// A JSON exec draws on the same budget: even the smallest
					// is refused while the server's is held.
					resp, body := h.do("POST", sandboxPath(b.ID, "/exec"), h.KeyB, map[string]any{"command": "echo ok", "max_output_bytes": 1})
					wantError(t, resp, body, http.StatusServiceUnavailable, api.CodeHostCapacity)
				}

				h.unblock()
				if st := <-done; st != http.StatusOK {
					t.Fatalf("the held call: %d", st)
				}
				if resp, body := h.call(key, sb, "after"); resp.StatusCode != http.StatusOK || h.calls("after") != 1 {
					t.Errorf("after the held call answered: %d %s (sidecar asked %d times)", resp.StatusCode, body, h.calls("after"))
				}
			})
		}
	}
}

// wantHeldRefusal checks a held-output refusal's details and hint.
func wantHeldRefusal(t *testing.T, ae *api.Error, used, requested int64) {
	t.Helper()
	if ae == nil {
		return
	}
	d, _ := ae.Details.(map[string]any)
	if d["resource"] != api.HeldOutput || d["used"] != float64(used) || d["requested"] != float64(requested) || ae.Hint == "" {
		t.Errorf("refusal = %+v, want resource held_output, used %d, requested %d, a hint", ae, used, requested)
	}
}

// A JSON exec asked for over the hosted MCP endpoint goes through the
// exec handler in-process, so it reserves its bound as the REST exec does:
// refused, the tool call is an MCP tool error with the refusal's message
// and hint, and the sidecar never ran the command.
func TestHeldOutputHostedMCPExec(t *testing.T) {
	t.Parallel()
	// An account's share below any exec's bound (exec.HeldBound(0)).
	e := newEnv(t, server.Config{HeldOutputBytes: exec.HeldBound(api.DefaultExecOutput), HeldOutputAccountBytes: 1})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	text, isErr := mcpCall(t, e, e.KeyA, "exec", map[string]string{"session_id": sb.ID, "command": "touch /tmp/ran"})
	if !isErr || !strings.HasPrefix(text, "Error [limit_exceeded]: exec refused: ") || !strings.Contains(text, "\nHint: stream the output instead") {
		t.Errorf("exec over MCP past the account's held output = %q (isError %v)", text, isErr)
	}
	if reqs, _ := e.Sidecar.Requests(); len(reqs) != 0 {
		t.Errorf("the sidecar ran %v", reqs)
	}
}
