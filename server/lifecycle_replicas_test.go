package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestReplicaLifecycleOrder: with two servers on one Postgres database, a
// lifecycle change of a sandbox on the second server while one is under
// way in the first server's driver waits for it (the lifecycle lease,
// server/sandbox/lease.go) and then acts on the state it left, instead of
// running its driver work alongside (session22-snapclaim22.md, "Not
// fixed"): a second resume answers the running sandbox without resuming
// it again; a delete during a pause or a resume tears the sandbox down
// after that finished (no workspace copy written after the delete read
// it, no pod recreated after the delete) and both callers get their
// answers; a pause during a delete waits for it and is 409 conflict (the
// sandbox is destroyed) with a hint, its driver never called.
func TestReplicaLifecycleOrder(t *testing.T) {
	tests := []struct {
		name          string
		first, second string // the changes: first on the first server, held in its driver
		wantFirst     int
		wantSecond    int
		wantEvents    []string
		wantStatus    string
	}{
		{
			"resume during a resume", "resume", "resume", http.StatusOK, http.StatusOK,
			[]string{"first: resume begins", "first: resume ends"},
			api.StatusActive,
		},
		{
			"delete during a pause", "pause", "delete", http.StatusOK, http.StatusNoContent,
			[]string{"first: pause begins", "first: pause ends", "second: delete"},
			api.StatusDestroyed,
		},
		{
			"delete during a resume", "resume", "delete", http.StatusOK, http.StatusNoContent,
			[]string{"first: resume begins", "first: resume ends", "second: delete"},
			api.StatusDestroyed,
		},
		{
			"pause during a delete", "delete", "pause", http.StatusNoContent, http.StatusConflict,
			[]string{"first: delete begins", "first: delete ends"},
			api.StatusDestroyed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				events []string
				waited = make(chan struct{}, 1) // the second server waits for the first's change
				acted  = make(chan struct{}, 1) // the second server's driver was called
			)
			event := func(e string) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
			cfg := server.Config{LockWaitForTests: func(string) {
				select {
				case waited <- struct{}{}:
				default:
				}
			}}
			rs, _ := newReplicas(t, 2, cfg)
			a, b := rs[0], rs[1]
			sb := a.create(a.KeyA, api.CreateSandboxRequest{})
			if tt.first == "resume" {
				if resp, body := a.do("POST", sandboxPath(sb.ID)+"/pause", a.KeyA, api.PauseSandboxRequest{Mode: api.PauseFilesystem}); resp.StatusCode != 200 {
					t.Fatalf("pause: %d %s", resp.StatusCode, body)
				}
			}

			// The second server's driver work, recorded.
			secondActs := func(what string) func(string) {
				return func(string) {
					event("second: " + what)
					select {
					case acted <- struct{}{}:
					default:
					}
				}
			}
			b.Driver.mu.Lock()
			b.Driver.ResumeHook = secondActs("resume")
			b.Driver.PauseHook = secondActs("pause")
			deleteHook := secondActs("delete")
			b.Driver.DeleteFunc = func(_ context.Context, id string) error { deleteHook(id); return nil }
			b.Driver.mu.Unlock()

			// The first server's change, held in its driver until the
			// second one's waits for it or (without the lease) acted.
			type answer struct {
				code int
				body []byte
			}
			second := make(chan answer, 1)
			hold := func(id string) {
				event("first: " + tt.first + " begins")
				go func() {
					method, path, body := change(tt.second, id)
					resp, got := b.do(method, path, b.KeyA, body)
					second <- answer{resp.StatusCode, got}
				}()
				select {
				case <-waited:
				case <-acted:
				case got := <-second:
					t.Errorf("the second server's %s answered %d %s during the first's %s, without waiting for it", tt.second, got.code, got.body, tt.first)
					second <- got
				case <-time.After(time.Minute):
					t.Error("the second server neither waited nor acted within a minute")
				}
				event("first: " + tt.first + " ends")
			}
			a.Driver.mu.Lock()
			switch tt.first {
			case "resume":
				a.Driver.ResumeHook = hold
			case "pause":
				a.Driver.PauseHook = hold
			case "delete":
				a.Driver.DeleteFunc = func(_ context.Context, id string) error { hold(id); return nil }
			}
			a.Driver.mu.Unlock()

			method, path, body := change(tt.first, sb.ID)
			if resp, body := a.do(method, path, a.KeyA, body); resp.StatusCode != tt.wantFirst {
				t.Errorf("the first server's %s: %d %s, want %d", tt.first, resp.StatusCode, body, tt.wantFirst)
			}
			got := <-second
			if got.code != tt.wantSecond {
				t.Errorf("the second server's %s: %d %s, want %d", tt.second, got.code, got.body, tt.wantSecond)
			}
			if got.code >= 400 {
				if e := apiError(t, got.body); e.Code != api.CodeConflict || e.Hint == "" {
					t.Errorf("the second server's refusal %s, want conflict with a hint", got.body)
				}
			}
			mu.Lock()
			happened := append([]string(nil), events...)
			mu.Unlock()
			if diff := cmp.Diff(tt.wantEvents, happened); diff != "" {
				t.Errorf("the driver work of both servers (-want +got):\n%s", diff)
			}
			if got := a.get(t, sb.ID); got.Status != tt.wantStatus {
				t.Errorf("the sandbox after both: %s, want %s", got.Status, tt.wantStatus)
			}
		})
	}
}

// change is the request of a lifecycle change of sandbox id: "pause"
// (filesystem), "resume" or "delete".
func change(what, id string) (method, path string, body any) {
	switch what {
	case "pause":
		return "POST", sandboxPath(id) + "/pause", api.PauseSandboxRequest{Mode: api.PauseFilesystem}
	case "resume":
		return "POST", sandboxPath(id) + "/resume", nil
	}
	return "DELETE", sandboxPath(id), nil
}
