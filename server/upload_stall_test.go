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

// TestUploadStallTimesOut: a streamed upload that stops moving for longer
// than the idle body timeout is answered 408 request_timeout, not left
// open or reported as an internal error.
func TestUploadStallTimesOut(t *testing.T) {
	e := newEnv(t, server.Config{BodyTimeouts: apihttp.BodyTimeouts{Idle: 200 * time.Millisecond}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
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
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: boxkite\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n0123456789",
		sandboxPath(sb.ID, "/files/raw?path=a"), e.KeyA)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var env api.ErrorEnvelope
	if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code != api.CodeRequestTimeout {
		t.Errorf("stalled upload = %d %s, want 408 request_timeout", resp.StatusCode, body)
	}
}

// TestChunkedUploadStallTimesOut: an upload of unknown length (chunked)
// that stops moving while the server reads it ahead to size it for the
// sidecar is answered 408 request_timeout, like one of known length, and
// the sidecar never sees it: it is called only once the body ended or
// outgrew the read-ahead.
func TestChunkedUploadStallTimesOut(t *testing.T) {
	e := newEnv(t, server.Config{BodyTimeouts: apihttp.BodyTimeouts{Idle: 200 * time.Millisecond}})
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	e.Sidecar.Route("PUT /files/raw", func(w http.ResponseWriter, r *http.Request) {
		t.Error("the sidecar was called for an upload that never ended")
		http.Error(w, "unexpected", http.StatusInternalServerError)
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: boxkite\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n",
		sandboxPath(sb.ID, "/files/raw?path=a"), e.KeyA)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var env api.ErrorEnvelope
	if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &env) != nil || env.Error == nil || env.Error.Code != api.CodeRequestTimeout {
		t.Errorf("stalled chunked upload = %d %s, want 408 request_timeout", resp.StatusCode, body)
	}
}
