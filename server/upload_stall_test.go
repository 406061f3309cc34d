package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server"
)

// TestUploadStallTimesOut: an upload that stops moving for longer than the
// idle body timeout is answered 408 request_timeout, not left open or
// reported as an internal error. One of known length is streamed to the
// sidecar as it comes; one of unknown length (chunked) is read ahead to
// size it for the sidecar, so the sidecar never sees it: it is called only
// once the body ended or outgrew the read-ahead.
func TestUploadStallTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name       string
		head, body string // the request's length header and the body sent before it stalls
		toSidecar  bool   // the sidecar is called with the stalled body
	}{
		{name: "known length", head: "Content-Length: 100", body: "0123456789", toSidecar: true},
		{name: "chunked", head: "Transfer-Encoding: chunked", body: "a\r\n0123456789\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, server.Config{BodyTimeouts: apihttp.BodyTimeouts{Idle: 200 * time.Millisecond}})
			sb := e.create(e.KeyA, api.CreateSandboxRequest{})
			e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
				if !tc.toSidecar {
					t.Error("the sidecar was called for an upload that never ended")
					http.Error(w, "unexpected", http.StatusInternalServerError)
					return
				}
				if _, err := io.Copy(io.Discard, r.Body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"path":"/workspace/a","size":100}`)
			})
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: boxkite\r\nAuthorization: Bearer %s\r\n%s\r\n\r\n%s",
				sandboxPath(sb.ID, "/files/raw?path=a"), e.KeyA, tc.head, tc.body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			var env api.ErrorEnvelope
			if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code != api.CodeRequestTimeout {
				t.Errorf("stalled upload = %d %s, want 408 request_timeout", resp.StatusCode, body)
			}
		})
	}
}
