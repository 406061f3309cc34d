package e2e

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/local"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestBudget spends a sandbox's small exec budget across the budgeted
// routes and checks the reference's sticky 403: the breaching call and
// every later budgeted call get the same session_budget_exceeded answer,
// what ran is torn down, and unbudgeted routes still work.
func TestBudget(t *testing.T) {
	t.Parallel()
	const limit = 4
	sb := newSandbox(t, servertest.WithDriverConfig(func(c *local.Config) { c.MaxExecCount = limit }))

	// Four budgeted calls of three kinds use the budget up.
	sb.sh("true")
	status, body := sb.route("POST", "/interpreter/exec", api.InterpreterExecRequest{Code: "1 + 1"})
	if status != http.StatusOK {
		t.Fatalf("interpreter exec: %d %s", status, body)
	}
	status, body = sb.route("POST", "/processes", api.ProcessStartRequest{Command: "sleep 60", MaxRuntimeSeconds: 60})
	if status != http.StatusCreated {
		t.Fatalf("start process: %d %s", status, body)
	}
	var proc api.ProcessStarted
	mustDecode(t, body, &proc)
	sb.sh("true")

	want := api.BudgetExceeded{Reason: api.BudgetReasonExecCount, Limit: limit, Used: limit}
	calls := []struct {
		name, method, path string
		body               any
	}{
		{"exec", "POST", "/exec", api.ExecRequest{Command: "true"}},
		{"interpreter", "POST", "/interpreter/exec", api.InterpreterExecRequest{Code: "2"}},
		{"process", "POST", "/processes", api.ProcessStartRequest{Command: "true", MaxRuntimeSeconds: 5}},
		{"lsp start", "POST", "/lsp/start", api.LSPStartRequest{Language: api.LanguageGo}},
		{"exec again", "POST", "/exec", api.ExecRequest{Command: "true"}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			sb := sb.in(t)
			status, body := sb.route(c.method, c.path, c.body)
			if status != http.StatusForbidden {
				t.Fatalf("%s %s = %d %s, want 403", c.method, c.path, status, body)
			}
			e := apiError(t, body)
			if e.Code != api.CodeSessionBudgetExceeded {
				t.Errorf("code = %q, want %q", e.Code, api.CodeSessionBudgetExceeded)
			}
			var got api.BudgetExceeded
			mustDecode(t, mustJSON(t, e.Details), &got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}

	// The breach tore down the background process; reads still answer.
	status, body = sb.route("GET", "/processes/"+proc.ProcessID+"/output", nil)
	if status != http.StatusOK {
		t.Fatalf("output after breach: %d %s", status, body)
	}
	var out api.ProcessOutput
	mustDecode(t, body, &out)
	if out.Status == api.ProcessRunning {
		t.Errorf("process status after breach = %q, want it ended", out.Status)
	}
	status, body = sb.route("POST", "/files", api.FileCreateRequest{Path: "still.txt", Content: "ok"})
	if status != http.StatusOK {
		t.Errorf("file create after breach = %d %s, want 200 (not budgeted)", status, body)
	}
}

// TestBudgetSeconds breaches the seconds half of the budget: one exec runs
// past it, and the next budgeted call is refused with reason exec_seconds.
func TestBudgetSeconds(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, servertest.WithDriverConfig(func(c *local.Config) { c.MaxExecSeconds = 1 }))
	sb.sh("sleep 1.1")
	status, body := sb.route("POST", "/interpreter/exec", api.InterpreterExecRequest{Code: "1"})
	if status != http.StatusForbidden {
		t.Fatalf("after 1.1 s of a 1 s budget: %d %s, want 403", status, body)
	}
	var got api.BudgetExceeded
	mustDecode(t, mustJSON(t, apiError(t, body).Details), &got)
	if got.Reason != api.BudgetReasonExecSeconds || got.Limit != 1 || got.Used < 1.1 {
		t.Errorf("details = %+v, want exec_seconds, limit 1, used ≥ 1.1", got)
	}
}
