package sidecar

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestWarm: a pool member's warm-up exec leaves the exec state a first
// exec would make (an idle epoll instance: the first exec after the
// claim makes none), is not a use (the claim is accepted), and is no
// exec of the sandbox's (not in its budget of one, not in its metrics).
func TestWarm(t *testing.T) {
	t.Parallel()
	const pool, fresh = "pool-token", "fresh-token"
	h := New(Options{Token: pool, Claimable: true, Workspace: t.TempDir(), Tools: ToolLimits{MaxExecCount: 1}})
	if err := h.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.pollers.free); n != 1 {
		t.Fatalf("%d idle exec pollers after the warm-up, want 1", n)
	}
	srv := serve(t, h)
	steps := []claimStep{
		{"POST", "/claim", pool, `{"token":"` + fresh + `"}`, http.StatusNoContent, ""},
		{"POST", "/exec", fresh, `{"command":"true"}`, http.StatusOK, ""},
		{"POST", "/exec", fresh, `{"command":"true"}`, http.StatusForbidden, ""}, // the budget of one is the user's
	}
	for i, s := range steps {
		status, body := call(t, s.method, srv.URL+s.path, http.Header{api.HeaderSidecarToken: {s.token}}, s.body)
		if status != s.want {
			t.Fatalf("step %d: %s %s = %d %s, want %d", i, s.method, s.path, status, body, s.want)
		}
	}
	if n := len(h.pollers.free); n != 1 {
		t.Fatalf("%d idle exec pollers after the first exec, want the warm-up's 1", n)
	}
	_, body := call(t, "GET", srv.URL+"/metrics", http.Header{api.HeaderSidecarToken: {fresh}}, "")
	if !strings.Contains(string(body), "\nboxkite_sidecar_exec_total 1\n") {
		t.Fatalf("metrics do not count exactly the one exec:\n%s", body)
	}
}

// TestWarmFails: a warm-up that cannot run its command says so, and
// leaves the sidecar claimable (its caller only logs it).
func TestWarmFails(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	h := New(Options{Token: "pool-token", Claimable: true, Workspace: ws})
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := h.Warm(context.Background()); err == nil {
		t.Fatal("warm-up in a missing workspace: no error")
	}
	if h.auth.used.Load() {
		t.Fatal("a failed warm-up marked the sidecar used")
	}
}
