package faulttest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/servertest"
)

// needRoot skips a test that needs root outside CI, and fails it in CI,
// which runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the fault suite needs root, and CI runs as root")
	}
	t.Skip("needs root: loop devices, mounts and cgroups")
}

// newClient is a client of s with its admin key.
func newClient(s *servertest.Server) *client.Client { return client.New(s.BaseURL, s.APIKey) }

// jailPID is the host pid of the sandbox's jail init, from the local
// driver's state file.
func jailPID(t *testing.T, s *servertest.Server, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.StateDir, "sandboxes", id, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.PID == 0 {
		t.Fatalf("state of %s: %s (%v)", id, b, err)
	}
	return st.PID
}

// poll calls cond until it is true or budget runs out, and returns how
// long that took. The budget is the test's patience, never a latency
// asserted: measured latencies are logged.
func poll(t *testing.T, what string, budget time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > budget {
			t.Fatalf("%s: not within %v", what, budget)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wholeLog reads every entry of a sandbox's log and the head the first
// page reported.
func wholeLog(t *testing.T, c *client.Client, id string) ([]api.LogEntry, *api.LogPage) {
	t.Helper()
	var entries []api.LogEntry
	var first *api.LogPage
	for {
		page, err := c.Log(context.Background(), id, api.MaxLogLimit, len(entries))
		if err != nil {
			t.Fatalf("read the log of %s: %v", id, err)
		}
		if first == nil {
			first = page
		}
		entries = append(entries, page.Entries...)
		if len(page.Entries) == 0 || len(entries) >= page.Total {
			return entries, first
		}
	}
}

// apiCode is the stable code of an API error, or "".
func apiCode(err error) string {
	if e, ok := errors.AsType[*api.Error](err); ok {
		return e.Code
	}
	return ""
}
