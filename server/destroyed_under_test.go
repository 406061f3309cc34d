package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
)

// TestDestroyedUnderWording: an interactive exec or a terminal takeover
// whose sandbox is destroyed under it closes with api.CloseSandboxEnded
// and one wording, "sandbox … was destroyed while the call ran", whether
// its sidecar's end is seen while the destroy runs or after it finished.
// After, they said "is destroyed" ("is destroyed (deleted)"), and which
// came first was a race (the bastion's TestDestroyedSandboxTellsSessions
// saw both). Each order is forced here: the fake sidecar drops the
// connection (dies, without a close frame) while the driver's delete
// waits, or once the DELETE has answered. Before 4410, such a takeover
// closed as if the shell had exited, and `boxkite attach` and the bastion
// took it for one (TestTakeoverSandboxDestroyed, folded in here).
func TestDestroyedUnderWording(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, route string
		dial        func(t *testing.T, e *env, id string) *websocket.Conn
		after       bool
	}{
		{"exec during the destroy", "GET /exec/interactive", dialSleep, false},
		{"exec after the destroy", "GET /exec/interactive", dialSleep, true},
		{"takeover during the destroy", "GET /pty", dialTerminal, false},
		{"takeover after the destroy", "GET /pty", dialTerminal, true},
	} {
		after := tc.after
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, server.Config{})
			started, drop, closed := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
			dropped, read := sync.OnceFunc(func() { close(drop) }), sync.OnceFunc(func() { close(closed) })
			defer dropped() // neither the fake sidecar nor the delete waits past the test
			defer read()
			e.Sidecar.Route(tc.route, func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				started <- struct{}{}
				<-drop
				c.CloseNow() // the sidecar dies: no exit frame, no close frame
			})
			e.Driver.DeleteFunc = func(context.Context, string) error {
				if !after {
					dropped()
					<-closed // the client has its answer before the row says destroyed
				}
				return nil
			}
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			conn := tc.dial(t, e, sb.ID)
			defer conn.CloseNow()
			<-started
			deleted := make(chan int, 1)
			go func() { deleted <- deleteStatus(e, sb.ID) }()
			if after {
				if code := <-deleted; code != http.StatusNoContent {
					t.Fatalf("delete: %d", code)
				}
				dropped()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, err := conn.Read(ctx)
			read()
			want := "sandbox " + sb.ID + " was destroyed while the call ran"
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != api.CloseSandboxEnded || ce.Reason != want {
				t.Errorf("the connection ended with %v, want close status %d and %q", err, api.CloseSandboxEnded, want)
			}
			if !after {
				if code := <-deleted; code != http.StatusNoContent {
					t.Errorf("delete: %d", code)
				}
			}
		})
	}
}

// dialSleep starts `sleep 30` as an interactive exec in sandbox id.
func dialSleep(t *testing.T, e *env, id string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.URL, "http") + sandboxPath(id, "/exec/interactive") + "?" +
		api.InteractiveRequest{Command: "sleep 30"}.Query().Encode()
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.KeyA}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return conn
}

// dialTerminal attaches to sandbox id's terminal.
func dialTerminal(t *testing.T, e *env, id string) *websocket.Conn {
	t.Helper()
	conn, _, err := dialTakeover(t, e, id, e.KeyA, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return conn
}

// deleteStatus deletes sandbox id with key A and returns the status, 0
// when the request failed; it may run off the test's goroutine.
func deleteStatus(e *env, id string) int {
	req, err := http.NewRequest(http.MethodDelete, e.URL+sandboxPath(id, ""), nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+e.KeyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
