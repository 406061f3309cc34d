package sidecar

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// budgetDetails decodes the details of a session_budget_exceeded error.
func budgetDetails(t testing.TB, body []byte) api.BudgetExceeded {
	t.Helper()
	var env struct {
		Error struct {
			Code    string             `json:"code"`
			Details api.BudgetExceeded `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	if env.Error.Code != api.CodeSessionBudgetExceeded {
		t.Fatalf("code %q, want %q", env.Error.Code, api.CodeSessionBudgetExceeded)
	}
	return env.Error.Details
}

func TestBudgetCountIsSharedAndSticky(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{MaxExecCount: 3}})
	doJSON(t, http.MethodPost, url+"/exec", `{"command":"true"}`, http.StatusOK, nil)
	doJSON(t, http.MethodPost, url+"/interpreter/exec", `{"code":"1"}`, http.StatusOK, nil)
	proc := startProcess(t, url, "sleep 30", 60)

	want := api.BudgetExceeded{Reason: api.BudgetReasonExecCount, Limit: 3, Used: 3}
	for _, c := range []struct{ path, body string }{
		{"/exec", `{"command":"true"}`},
		{"/exec", `{"command":"true"}`},
		{"/interpreter/exec", `{"code":"1"}`},
		{"/process/start", `{"command":"true","max_runtime_seconds":5}`},
		{"/lsp/start", `{"language":"go"}`},
		{"/lsp/lsp_x/completion", `{"path":"a.go","line":0,"character":0}`},
	} {
		body := doJSON(t, http.MethodPost, url+c.path, c.body, http.StatusForbidden, nil)
		if diff := cmp.Diff(want, budgetDetails(t, body)); diff != "" {
			t.Errorf("POST %s over the budget: details (-want +got):\n%s", c.path, diff)
		}
	}
	// The breach tore down what was running; unbudgeted routes still answer.
	if got := processOutput(t, url, proc, 0); got.Status != api.ProcessKilled {
		t.Errorf("process after the breach: %q, want killed", got.Status)
	}
	var st api.InterpreterStatus
	doJSON(t, http.MethodGet, url+"/interpreter/status", nil, http.StatusOK, &st)
	if st.Running {
		t.Errorf("interpreter still running after the breach")
	}
}

func TestBudgetConcurrentCallsNeverOvershoot(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{MaxExecCount: 10}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 50 {
		wg.Go(func() {
			status, _ := call(t, http.MethodPost, url+"/exec", authed, `{"command":"true"}`)
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[int]int{200: 10, 403: 40}, statuses); diff != "" {
		t.Errorf("50 concurrent execs against a budget of 10: statuses (-want +got):\n%s", diff)
	}
}

func TestBudgetSeconds(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{Tools: ToolLimits{MaxExecSeconds: 1}})
	doJSON(t, http.MethodPost, url+"/exec", `{"command":"sleep 1.1"}`, http.StatusOK, nil)
	body := doJSON(t, http.MethodPost, url+"/exec", `{"command":"true"}`, http.StatusForbidden, nil)
	got := budgetDetails(t, body)
	if got.Reason != api.BudgetReasonExecSeconds || got.Limit != 1 || got.Used < 1.1 {
		t.Errorf("details = %+v, want exec_seconds, limit 1, used at least 1.1", got)
	}
	if e := decodeError(t, body); !strings.Contains(e.Message, "seconds") {
		t.Errorf("message %q does not say seconds", e.Message)
	}
}

func TestBudgetDisabled(t *testing.T) {
	t.Parallel()
	b := newBudget(-1, -1)
	for range 1000 {
		if err := b.reserve(); err != nil {
			t.Fatalf("disabled budget: %v", err)
		}
	}
	b.record(time.Hour)
	if err := b.reserve(); err != nil {
		t.Fatalf("disabled budget after an hour: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	url, _ := newToolServer(t, Options{})
	doJSON(t, http.MethodPost, url+"/exec", `{"command":"true"}`, http.StatusOK, nil)
	doJSON(t, http.MethodPost, url+"/exec", `{"command":"exit 3"}`, http.StatusOK, nil)
	doJSON(t, http.MethodPost, url+"/exec", `{"command":""}`, http.StatusUnprocessableEntity, nil)
	for _, id := range []string{"proc_a", "proc_b"} {
		doJSON(t, http.MethodGet, url+"/process/"+id+"/output", nil, http.StatusNotFound, nil)
	}
	if status, _ := call(t, http.MethodGet, url+"/metrics", nil, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token = %d, want 401", status)
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderSidecarToken, testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	text := string(doJSON(t, http.MethodGet, url+"/metrics", nil, http.StatusOK, nil))
	for _, want := range []string{
		"# TYPE boxkite_sidecar_uptime_seconds gauge\nboxkite_sidecar_uptime_seconds ",
		`boxkite_sidecar_requests_total{route="POST /exec"} 3` + "\n",
		`boxkite_sidecar_request_errors_total{route="POST /exec"} 1` + "\n",
		`boxkite_sidecar_requests_total{route="GET /process/{id}/output"} 2` + "\n",
		`boxkite_sidecar_request_errors_total{route="GET /process/{id}/output"} 2` + "\n",
		`boxkite_sidecar_request_errors_total{route="GET /metrics"} 1` + "\n",
		"# TYPE boxkite_sidecar_exec_total counter\nboxkite_sidecar_exec_total 2\n",
		"boxkite_sidecar_exec_errors_total 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "proc_a") {
		t.Errorf("metrics name a raw path:\n%s", text)
	}
}
