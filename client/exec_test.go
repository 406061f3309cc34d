package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/google/go-cmp/cmp"
)

// ndjson writes events as a streaming server would, flushing after each.
func ndjson(w http.ResponseWriter, events ...api.ExecEvent) {
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	enc := json.NewEncoder(w)
	for _, ev := range events {
		enc.Encode(ev)
		w.(http.Flusher).Flush()
	}
}

func TestExecStream(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20) // one line far past bufio.Scanner's 64 KiB
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wantCode int
		wantErr  string
		wantEvs  []api.ExecEvent
	}{
		{
			name: "stdout and stderr then exit",
			handler: func(w http.ResponseWriter, r *http.Request) {
				ndjson(w,
					api.ExecEvent{Type: api.EventStdout, Data: "out1\n"},
					api.ExecEvent{Type: api.EventStderr, Data: "err1\n"},
					api.ExecEvent{Type: "progress"}, // unknown types are skipped
					api.ExecEvent{Type: api.EventStdout, Data: "out2\n"},
					api.ExecEvent{Type: api.EventExit, ExitCode: 7, DurationMS: 12})
			},
			wantCode: 7,
			wantEvs: []api.ExecEvent{
				{Type: api.EventStdout, Data: "out1\n"},
				{Type: api.EventStderr, Data: "err1\n"},
				{Type: api.EventStdout, Data: "out2\n"},
			},
		},
		{
			name: "long line",
			handler: func(w http.ResponseWriter, r *http.Request) {
				ndjson(w, api.ExecEvent{Type: api.EventStdout, Data: long}, api.ExecEvent{Type: api.EventExit})
			},
			wantEvs: []api.ExecEvent{{Type: api.EventStdout, Data: long}},
		},
		{
			name: "timeout exit code",
			handler: func(w http.ResponseWriter, r *http.Request) {
				ndjson(w, api.ExecEvent{Type: api.EventExit, ExitCode: api.ExitCodeTimeout})
			},
			wantCode: api.ExitCodeTimeout,
		},
		{
			name: "error event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				ndjson(w, api.ExecEvent{Type: api.EventError, Error: &api.Error{Code: api.CodeSandboxFailed, Message: "sidecar went away"}})
			},
			wantErr: "sidecar went away [sandbox_operation_failed]",
		},
		{
			name: "stream cut short",
			handler: func(w http.ResponseWriter, r *http.Request) {
				ndjson(w, api.ExecEvent{Type: api.EventStdout, Data: "partial"})
			},
			wantErr: "POST /v1/sandboxes/{id}/exec: the connection to the boxkite server at {URL} was cut: the stream ended without its last event",
			wantEvs: []api.ExecEvent{{Type: api.EventStdout, Data: "partial"}},
		},
		{
			name: "error status",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":{"code":"not_found","message":"sandbox not found"}}`)
			},
			wantErr: "sandbox not found [not_found]",
		},
		{
			name: "server without streaming",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 3, Stdout: "o", Stderr: "e"})
			},
			wantCode: 3,
			wantEvs:  []api.ExecEvent{{Type: api.EventStdout, Data: "o"}, {Type: api.EventStderr, Data: "e"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Accept"); got != api.ContentTypeNDJSON {
					t.Errorf("Accept = %q, want %q", got, api.ContentTypeNDJSON)
				}
				if r.URL.Path != "/v1/sandboxes/sb1/exec" {
					t.Errorf("path = %q, want /v1/sandboxes/sb1/exec", r.URL.Path)
				}
				tt.handler(w, r)
			})
			var got []api.ExecEvent
			code, err := c.ExecStream(context.Background(), "sb1", api.ExecRequest{Command: "x"}, func(ev api.ExecEvent) error {
				got = append(got, ev)
				return nil
			})
			if gotErr, want := errString(err), strings.ReplaceAll(tt.wantErr, "{URL}", c.BaseURL); gotErr != want {
				t.Errorf("ExecStream() error = %q, want %q", gotErr, want)
			}
			if code != tt.wantCode {
				t.Errorf("ExecStream() code = %d, want %d", code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantEvs, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecStreamCallbackError(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		ndjson(w, api.ExecEvent{Type: api.EventStdout, Data: "a"}, api.ExecEvent{Type: api.EventStdout, Data: "b"}, api.ExecEvent{Type: api.EventExit})
	})
	stop := errors.New("stop")
	n := 0
	_, err := c.ExecStream(context.Background(), "sb", api.ExecRequest{Command: "x"}, func(api.ExecEvent) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("ExecStream() = %v after %d calls, want the callback's error after 1", err, n)
	}
}

func TestExecJSON(t *testing.T) {
	t.Parallel()
	var got api.ExecRequest
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		json.NewEncoder(w).Encode(api.ExecResult{ExitCode: 1, Stdout: "hi\n", DurationMS: 5})
	})
	req := api.ExecRequest{Command: "echo hi", Timeout: 5, Stdin: "in", Cwd: "/tmp", Env: map[string]string{"A": "1"}}
	res, err := c.Exec(context.Background(), "sb", req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&api.ExecResult{ExitCode: 1, Stdout: "hi\n", DurationMS: 5}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
