package servertest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/servertest"
)

// TestConcurrentCreatesRealDriver: creates racing against a concurrency
// limit through the real stack (local driver, jailed sidecars) never
// leave more sandboxes than the limit, and the ones that win work.
func TestConcurrentCreatesRealDriver(t *testing.T) {
	const limit, attempts = 2, 6
	s := servertest.New(t, servertest.WithConfig(server.Config{Limits: server.Limits{AccountConcurrent: limit}}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]int{}
	var ids []string
	for range attempts {
		wg.Go(func() {
			resp, body := do(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{}, "")
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == http.StatusCreated {
				var sb api.Sandbox
				if err := json.Unmarshal(body, &sb); err != nil {
					t.Errorf("decode %s: %v", body, err)
				}
				ids = append(ids, sb.ID)
				got["created"]++
				return
			}
			var env api.ErrorEnvelope
			if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
				t.Errorf("create: %d %s", resp.StatusCode, body)
				return
			}
			got[env.Error.Code]++
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"created": limit, api.CodeConcurrentSandboxLimit: attempts - limit}, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	observed, err := s.Driver.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(observed) != limit {
		t.Errorf("the driver runs %d sandboxes, want %d", len(observed), limit)
	}
	for _, id := range ids {
		resp, body := do(t, s, "POST", "/v1/sandboxes/"+id+"/exec", api.ExecRequest{Command: "echo ok"}, "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("exec in %s: %d %s", id, resp.StatusCode, body)
		}
	}
}
