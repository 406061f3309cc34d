package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
)

// fakePTY serves the sidecar's WS /pty: binary frames are echoed back
// with "out:" in front, text frames with "ctl:"; each attach reports its
// query on attached.
func fakePTY(t *testing.T, e *env) (attached chan string) {
	attached = make(chan string, 10)
	e.Sidecar.Route("GET /pty", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderSidecarToken) != e.Sidecar.Token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		attached <- r.URL.RawQuery
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if typ == websocket.MessageText && string(data) == "exit" {
				c.Close(websocket.StatusCode(4000), "shell exited")
				return
			}
			prefix := map[websocket.MessageType]string{websocket.MessageBinary: "out:", websocket.MessageText: "ctl:"}[typ]
			if err := c.Write(r.Context(), typ, append([]byte(prefix), data...)); err != nil {
				return
			}
		}
	})
	return attached
}

func dialTakeover(t *testing.T, e *env, id, key, query string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(e.URL, "http") + sandboxPath(id, "/takeover"+query)
	hdr := http.Header{}
	if key != "" {
		hdr.Set("Authorization", "Bearer "+key)
	}
	return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
}

func TestTakeoverRelay(t *testing.T) {
	t.Parallel()
	// A flush interval no test outlasts: an entered line that reaches the
	// log at all was written when entered, not flushed by the clock.
	e := newEnv(t, server.Config{TakeoverFlushInterval: time.Hour})
	attached := fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	conn, _, err := dialTakeover(t, e, sb.ID, e.KeyA, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	if q := <-attached; q != "" {
		t.Errorf("sidecar query = %q, want none", q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	frames := []struct {
		typ  websocket.MessageType
		data string
	}{
		{websocket.MessageBinary, "ls\r"},
		{websocket.MessageText, `{"type":"resize","cols":100,"rows":30}`},
		{websocket.MessageBinary, "\x03"},
	}
	for i, f := range frames {
		if i == 1 {
			// An entered line is on the record at once, long before the
			// flush interval (an hour here): live watchers see the command
			// as it runs.
			logEntries(t, e, sb.ID, 2)
		}
		if err := conn.Write(ctx, f.typ, []byte(f.data)); err != nil {
			t.Fatal(err)
		}
		typ, got, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[websocket.MessageType]string{websocket.MessageBinary: "out:", websocket.MessageText: "ctl:"}[f.typ] + f.data
		if typ != f.typ || string(got) != want {
			t.Errorf("relayed %v %q, want %v %q", typ, got, f.typ, want)
		}
	}
	// The sidecar's close status reaches the client.
	conn.Write(ctx, websocket.MessageText, []byte("exit"))
	_, _, err = conn.Read(ctx)
	if st := websocket.CloseStatus(err); st != 4000 {
		t.Errorf("close status = %v (%v), want 4000", st, err)
	}

	entries := logEntries(t, e, sb.ID, 4)
	var ops []string
	for _, en := range entries {
		ops = append(ops, en.Operation)
		if en.Source != api.LogSourceHumanTakeover {
			t.Errorf("%s source = %q", en.Operation, en.Source)
		}
	}
	if !cmp.Equal(ops, []string{"takeover_start", "takeover_input", "takeover_input", "takeover_end"}) {
		t.Fatalf("ops = %v", ops)
	}
	for i, want := range map[int]string{1: "ls\r", 2: "\x03"} {
		var input map[string]any
		mustUnmarshal(t, entries[i].Detail, &input)
		if input["input"] != want || input["bytes"] != float64(len(want)) {
			t.Errorf("takeover_input detail = %v, want the typed bytes %q", input, want)
		}
	}
	var end map[string]any
	mustUnmarshal(t, entries[3].Detail, &end)
	if end["bytes_typed"] != 4.0 || end["read_only"] != false || end["api_key_id"] == "" {
		t.Errorf("takeover_end detail = %v, want 4 bytes typed (binary frames only)", end)
	}
}

func TestTakeoverReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	attached := fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	conn, _, err := dialTakeover(t, e, sb.ID, e.KeyA, "?read_only=1")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if q := <-attached; q != "read_only=1" {
		t.Errorf("sidecar query = %q, want read_only=1", q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn.Write(ctx, websocket.MessageBinary, []byte("rm -rf /\r"))
	// Nothing comes back: the input never reached the (echoing) sidecar.
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, got, err := conn.Read(rctx); err == nil {
		t.Errorf("read-only input was relayed: %q", got)
	}
	rcancel()
	conn.CloseNow()
	entries := logEntries(t, e, sb.ID, 2)
	var end map[string]any
	mustUnmarshal(t, entries[1].Detail, &end)
	if end["bytes_typed"] != 0.0 || end["read_only"] != true {
		t.Errorf("takeover_end detail = %v", end)
	}
}

// TestTakeoverRefusals: every refusal is a plain HTTP error before the
// upgrade.
func TestTakeoverRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, server.Config{})
	fakePTY(t, e)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	member := e.addKey(e.AcctA, model.RoleMember)
	tests := []struct {
		name, key, query string
		status           int
		code             string
	}{
		{"member key", member, "", http.StatusForbidden, api.CodeTakeoverNotPermitted},
		{"other account", e.KeyB, "", http.StatusNotFound, api.CodeNotFound},
		{"bad read_only", e.KeyA, "?read_only=maybe", http.StatusBadRequest, api.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := dialTakeover(t, e, sb.ID, tt.key, tt.query)
			if err == nil || resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("dial = %v, %v; want HTTP %d", resp, err, tt.status)
			}
			hresp, body := e.do("GET", sandboxPath(sb.ID, "/takeover"+tt.query), tt.key, nil)
			wantError(t, hresp, body, tt.status, tt.code)
		})
	}
	// A sidecar that does not answer is a 502 before the upgrade.
	e.Sidecar.Close()
	_, resp, err := dialTakeover(t, e, sb.ID, e.KeyA, "")
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("dial with the sidecar gone = %v, %v; want HTTP 502", resp, err)
	}
	if page := getLog(t, e, sb.ID, ""); page.Total != 0 {
		t.Errorf("refused takeovers wrote %d audit entries", page.Total)
	}
}
