package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

func TestStreamProcess(t *testing.T) {
	t.Parallel()
	code := 3
	tests := []struct {
		name     string
		body     string
		want     []api.ProcessEvent
		wantExit *api.ProcessEvent
		wantErr  string
	}{
		{
			name: "output then exit",
			body: "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\\n\",\"next_offset\":2}\n\n" +
				": keep-alive\n\n" +
				"event: output\r\ndata: {\"type\":\"output\",\"stdout_chunk\":\"b\",\"next_offset\":3}\r\n\r\n" +
				"event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\",\"exit_code\":3}\n\n",
			want: []api.ProcessEvent{
				{Type: "output", StdoutChunk: "a\n", NextOffset: 2},
				{Type: "output", StdoutChunk: "b", NextOffset: 3},
			},
			wantExit: &api.ProcessEvent{Type: "exit", Status: "exited", ExitCode: &code},
		},
		{
			name: "type from the event name; unknown events skipped",
			body: "event: output\ndata: {\"stdout_chunk\":\"x\",\"next_offset\":1}\n\n" +
				"event: later\ndata: {}\n\n" +
				"event: exit\ndata: {\"status\":\"stopped\"}\n\n",
			want:     []api.ProcessEvent{{Type: "output", StdoutChunk: "x", NextOffset: 1}},
			wantExit: &api.ProcessEvent{Type: "exit", Status: "stopped"},
		},
		{
			name: "an error event ends it as an error",
			body: "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\",\"next_offset\":1}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"code\":\"sandbox_operation_failed\",\"message\":\"cut\",\"hint\":\"again\"}}\n\n" +
				"event: exit\ndata: {\"type\":\"exit\",\"status\":\"exited\"}\n\n",
			want:    []api.ProcessEvent{{Type: "output", StdoutChunk: "a", NextOffset: 1}},
			wantErr: "cut [sandbox_operation_failed]",
		},
		{
			name:    "an error event without its error",
			body:    "event: error\ndata: {}\n\n",
			wantErr: "process stream ended with an error event without its error",
		},
		{
			name:    "cut short",
			body:    "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\"}\n\n",
			want:    []api.ProcessEvent{{Type: "output", StdoutChunk: "a"}},
			wantErr: "was cut: the stream ended without its last event",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/sandboxes/sb/processes/proc_1/stream" || r.URL.Query().Get("since_offset") != "7" {
					t.Errorf("request %s", r.URL)
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.body)
			})
			var got []api.ProcessEvent
			exit, err := c.StreamProcess(context.Background(), "sb", "proc_1", 7, func(ev api.ProcessEvent) error {
				got = append(got, ev)
				return nil
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExit, exit); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamProcessCallbackError(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: output\ndata: {\"type\":\"output\",\"stdout_chunk\":\"a\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	stop := errors.New("stop")
	_, err := c.StreamProcess(context.Background(), "sb", "p", 0, func(api.ProcessEvent) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("error = %v, want the callback's", err)
	}
}

// TestAttach runs a terminal against a fake takeover endpoint that echoes
// keystrokes, reports resizes and closes normally on "exit".
func TestAttach(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer bxk_live_test" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"invalid_api_key","message":"bad key"}}`)
			return
		}
		if r.URL.Path != "/v1/sandboxes/sb/takeover" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"not_found","message":"sandbox not found"}}`)
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		conn.Write(ctx, websocket.MessageBinary, []byte("ro="+r.URL.Query().Get("read_only")+"\n"))
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText {
				var ctl api.PTYControl
				json.Unmarshal(b, &ctl)
				b, _ = json.Marshal(ctl)
				conn.Write(ctx, websocket.MessageText, []byte(`{"ignored":true}`))
			}
			if string(b) == "exit" {
				conn.Write(ctx, websocket.MessageText, []byte(`{"type":"exit","exit_code":137,"signal":9}`))
				conn.Close(websocket.StatusNormalClosure, "shell exited")
				return
			}
			conn.Write(ctx, websocket.MessageBinary, b)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := c.Attach(ctx, "sb", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := term.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := term.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := term.Exited(); ok {
		t.Errorf("Exited() is ok while the shell runs")
	}
	if _, err := term.Write([]byte("exit")); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(term)
	if err != nil {
		t.Errorf("read until close: %v", err)
	}
	want := "ro=1\nhello" + `{"type":"resize","cols":120,"rows":40}`
	if string(out) != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	// The exit frame before the close is how the shell exited, not output.
	if code, sig, ok := term.Exited(); code != 137 || sig != 9 || !ok {
		t.Errorf("Exited() = %d, %d, %v; want 137, 9, true", code, sig, ok)
	}

	// Refusals before the upgrade are *api.Error, as for any route.
	_, err = c.Attach(ctx, "nope", false)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeNotFound || e.Status != 404 {
		t.Errorf("Attach(missing) error = %v, want not_found", err)
	}
	bad := &client.Client{BaseURL: c.BaseURL, APIKey: "wrong"}
	_, err = bad.Attach(ctx, "sb", false)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeInvalidAPIKey {
		t.Errorf("Attach(bad key) error = %v, want invalid_api_key", err)
	}
}
