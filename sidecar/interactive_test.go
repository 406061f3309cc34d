package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

// TestInteractiveOutputToASlowClient: a client slower to take the output
// than pipeGrace still gets all of it, the tail the command wrote just
// before it exited included, and then the exit frame (a CI run lost the
// last 17 bytes of `ssh … 'cat f'` so).
func TestInteractiveOutputToASlowClient(t *testing.T) {
	t.Parallel()
	produce := func(size int) string { return fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", size) }
	tests := []struct {
		name   string
		req    api.InteractiveRequest
		size   int // more than a pipe holds: the pipe is full when the command exits
		stream byte
	}{
		{"stdout", api.InteractiveRequest{Command: produce(256<<10 + 17)}, 256<<10 + 17, api.StreamStdout},
		{"stderr", api.InteractiveRequest{Command: produce(256<<10+17) + " >&2"}, 256<<10 + 17, api.StreamStderr},
		// A terminal is read in smaller pieces, and holds less.
		{"a pty", api.InteractiveRequest{Command: produce(32<<10 + 17), TTY: true, Cols: 80, Rows: 24, Term: "xterm"}, 32<<10 + 17, api.StreamStdout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Each frame waits twice the grace: the command has long
			// exited, its output's tail still in the pipe, when the
			// last frames go.
			srv, _ := newServer(t, Options{Token: testToken, slowOutput: func() { time.Sleep(2 * pipeGrace) }})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/exec/interactive?"+tt.req.Query().Encode(),
				&websocket.DialOptions{HTTPHeader: authed})
			if err != nil {
				t.Fatalf("dial /exec/interactive: %v", err)
			}
			defer conn.CloseNow()
			conn.SetReadLimit(1 << 20)
			if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"eof"}`)); err != nil {
				t.Fatalf("send eof: %v", err)
			}
			got := map[byte]int{}
			for {
				typ, b, err := conn.Read(ctx)
				if err != nil {
					t.Fatalf("read: %v after %v bytes by stream, before the exit frame", err, got)
				}
				if typ == websocket.MessageBinary && len(b) > 0 {
					if n := strings.Count(string(b[1:]), "x"); n != len(b)-1 {
						t.Fatalf("a frame of stream %d holds %d bytes other than x", b[0], len(b)-1-n)
					}
					got[b[0]] += len(b) - 1
					continue
				}
				var c api.InteractiveControl
				if err := json.Unmarshal(b, &c); err != nil || c.Type != api.InteractiveExit {
					t.Fatalf("text frame %q; want the exit frame", b)
				}
				if c.ExitCode == nil || *c.ExitCode != 0 {
					t.Errorf("exit frame %s; want exit code 0", b)
				}
				break
			}
			if diff := cmp.Diff(map[byte]int{tt.stream: tt.size}, got); diff != "" {
				t.Errorf("bytes by stream before the exit frame (-want +got):\n%s", diff)
			}
		})
	}
}
