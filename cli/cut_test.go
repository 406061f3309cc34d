package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// cutConn drops the client's connection from inside a handler, as a
// server killed mid-request does: no answer, or (after a flush) half of one.
func cutConn(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// TestConnectionCut: a server that stops (kill -9, a restart) or a proxy
// that drops the connection after it was made, mid-request or mid-stream,
// is reported as a cut connection with a hint, exit 1, by every kind of
// call: a JSON request, a streamed exec, an upload and a download. Before,
// each printed the transport's own words ("exec: read stream: unexpected
// EOF", "PUT …: use of closed network connection") and no hint.
func TestConnectionCut(t *testing.T) {
	tests := []struct {
		name  string
		route string
		h     func(t *testing.T) http.HandlerFunc
		stdin string
		args  []string
	}{
		{
			name:  "a JSON request, no answer",
			route: "GET /processes",
			h: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) { cutConn(t, w) }
			},
			args: []string{"ps"},
		},
		{
			name:  "a streamed exec, cut mid-stream",
			route: "POST /exec",
			h: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", api.ContentTypeNDJSON)
					json.NewEncoder(w).Encode(api.ExecEvent{Type: api.EventStdout, Data: "started\n"})
					w.(http.Flusher).Flush()
					cutConn(t, w)
				}
			},
			args: []string{"exec", "--", "sleep", "10"},
		},
		{
			name:  "a streamed exec that ends without its exit event",
			route: "POST /exec",
			h: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", api.ContentTypeNDJSON)
					json.NewEncoder(w).Encode(api.ExecEvent{Type: api.EventStdout, Data: "started\n"})
				}
			},
			args: []string{"exec", "--", "sleep", "10"},
		},
		{
			name:  "an upload, cut mid-body",
			route: "PUT /files/raw",
			h: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					io.ReadFull(r.Body, make([]byte, 64<<10))
					cutConn(t, w)
				}
			},
			stdin: strings.Repeat("x", 8<<20),
			args:  []string{"files", "cp", "-", ":/workspace/f"},
		},
		{
			name:  "a download, cut mid-body",
			route: "GET /files/raw",
			h: func(t *testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/octet-stream")
					w.Header().Set("Content-Length", "1000000")
					w.Write([]byte(strings.Repeat("y", 1000)))
					w.(http.Flusher).Flush()
					cutConn(t, w)
				}
			},
			args: []string{"files", "cp", ":/workspace/f", "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fakeSandbox
			f.serve(t, map[string]http.HandlerFunc{
				tt.route:         tt.h(t),
				"POST /files/ls": replyJSON(200, api.LsResult{Entries: []api.LsEntry{{Path: "/workspace/f", Size: 1000000}}}),
			})
			r := runCLI(t, tt.stdin, tt.args...)
			if r.code != exitError || !strings.Contains(r.stderr, "was cut") ||
				!strings.Contains(r.stderr, "\nhint: the server stopped, restarted or dropped the connection") {
				t.Errorf("boxkite %q: exit %d, stderr %q; want exit 1, a cut connection and its hint", tt.args, r.code, r.stderr)
			}
		})
	}
}
