package envd

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/e2b/envdpb/process"
)

// TestInputInFrames sends 3 MiB of stdin to a sidecar stand-in that
// reads frames of at most 1 MiB, as the sidecar's interactive exec does
// (interactiveMaxFrame): it gets all of it, in frames it takes. A
// sendStdin of 1 MiB or more went as one frame, which closed the
// connection and killed the command.
func TestInputInFrames(t *testing.T) {
	t.Parallel()
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(1 << 20)
		var stdin []byte
		defer func() { got <- stdin }()
		for {
			_, b, err := conn.Read(r.Context())
			if err != nil {
				return
			}
			if len(b) == 0 || b[0] != api.StreamStdin {
				t.Errorf("frame %q…, want stdin", b[:min(len(b), 8)])
				return
			}
			stdin = append(stdin, b[1:]...)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{pid: 1000, conn: conn}
	want := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	if err := p.input(ctx, &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: want}}); err != nil {
		t.Fatalf("input: %v", err)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	select {
	case stdin := <-got:
		if !bytes.Equal(stdin, want) {
			t.Errorf("the sidecar got %d bytes of stdin, want all %d", len(stdin), len(want))
		}
	case <-ctx.Done():
		t.Fatal("the sidecar stand-in did not end")
	}
}
