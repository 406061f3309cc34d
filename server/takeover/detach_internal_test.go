package takeover

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeTerminal is a sidecar's /pty that prints "out" and then ignores
// every frame (an older sidecar, which knows no detach frame), or, with
// idle, answers a detach frame by closing normally after "flushed".
func fakeTerminal(t *testing.T, idle bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		if c.Write(r.Context(), websocket.MessageBinary, []byte("out")) != nil {
			return
		}
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if idle && typ == websocket.MessageText && strings.Contains(string(b), `"until_idle":true`) {
				_ = c.Write(r.Context(), websocket.MessageBinary, []byte("flushed"))
				_ = c.Close(websocket.StatusNormalClosure, "detached")
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// TestDetachUntilIdleOlderSidecar: a client's detach until_idle reaches a
// sidecar that answers it (its output until then, then a normal close);
// with an older sidecar, which ignores the frame, the relay detaches at
// once (as before the frame existed) instead of waiting for a close that
// never comes (bastion21's hang: `ssh ID@host < script` against a pod of
// an older image).
func TestDetachUntilIdleOlderSidecar(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		idle bool
		want string
	}{{"sidecar that answers it", true, "flushed"}, {"older sidecar", false, ""}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // hang guard
			defer cancel()
			term := fakeTerminal(t, c.idle)
			s := &Service{d: Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				up, _, err := websocket.Dial(r.Context(), term, nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer up.CloseNow()
				down, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer down.CloseNow()
				s.relayPTY(r.Context(), down, up, false, relayHooks{idleDetach: c.idle})
			}))
			defer relay.Close()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			if _, b, err := conn.Read(ctx); err != nil || string(b) != "out" {
				t.Fatalf("first output %q, %v; want out", b, err)
			}
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"detach","until_idle":true}`)); err != nil {
				t.Fatal(err)
			}
			var got string
			for {
				_, b, err := conn.Read(ctx)
				if err != nil {
					var ce websocket.CloseError
					if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure {
						t.Fatalf("after %q: %v, want a normal close", got, err)
					}
					break
				}
				got += string(b)
			}
			if got != c.want {
				t.Errorf("output %q, want %q", got, c.want)
			}
		})
	}
}
