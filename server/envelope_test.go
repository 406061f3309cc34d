package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/sidecar"
)

// slowBodyTimeout is the body deadline of both servers in the envelope
// tests, short so that the slow-body case ends soon.
const slowBodyTimeout = 300 * time.Millisecond

// twoAPIs is a control plane and a real sidecar, each served the way its
// binary serves it (apihttp.NewServer on apihttp.Listener), with a sandbox
// of the control plane pointing at the sidecar.
type twoAPIs struct {
	e           *env
	serverAddr  string // the control plane
	sidecarAddr string
	sandboxID   string
}

func newTwoAPIs(t *testing.T) *twoAPIs {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	timeouts := apihttp.BodyTimeouts{Whole: slowBodyTimeout, Idle: slowBodyTimeout}
	const token = "envelope-sidecar-token"
	sc := sidecar.New(sidecar.Options{Token: token, Workspace: t.TempDir(), Log: log, BodyTimeouts: timeouts})
	scLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := apihttp.NewServer(sc, log)
	go func() { _ = hs.Serve(apihttp.Listener(scLn)) }()
	t.Cleanup(func() { hs.Close() })

	e := newEnv(t, server.Config{BodyTimeouts: timeouts})
	e.Driver.CreateFunc = func(context.Context, model.Spec) (model.Endpoint, error) {
		return model.Endpoint{Network: "tcp", Address: scLn.Addr().String(), Token: token}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.Server.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	return &twoAPIs{e: e, serverAddr: ln.Addr().String(), sidecarAddr: scLn.Addr().String(), sandboxID: sb.ID}
}

// rawRequest is a request written byte for byte, so that malformed ones
// reach the server as they are.
type rawRequest struct {
	method, contentType string
	header              string // extra header lines, each ending in \r\n
	body                []byte
	declared            int  // Content-Length to declare; -1 for the body's length
	hold                bool // send the headers and part of the body, then stall
	raw                 []byte
	// path is the route under /v1/sandboxes/{id} and sidecarPath the
	// sidecar's; both empty: exec.
	path, sidecarPath string
}

// exchange sends req to the exec route of one API and reads the answer.
func (a *twoAPIs) exchange(t *testing.T, toSidecar bool, req rawRequest) (*http.Response, []byte) {
	t.Helper()
	route, sidecarRoute := "/exec", "/exec"
	if req.path != "" {
		route, sidecarRoute = req.path, req.sidecarPath
	}
	addr, path, auth := a.serverAddr, "/v1/sandboxes/"+a.sandboxID+route, "Authorization: Bearer "+a.e.KeyA
	if toSidecar {
		addr, path, auth = a.sidecarAddr, sidecarRoute, api.HeaderSidecarToken+": envelope-sidecar-token"
	}
	wire := req.raw
	if wire == nil {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: boxkite\r\n%s\r\n", req.method, path, auth)
		if req.contentType != "" {
			fmt.Fprintf(&b, "Content-Type: %s\r\n", req.contentType)
		}
		n := req.declared
		if n < 0 {
			n = len(req.body)
		}
		fmt.Fprintf(&b, "Content-Length: %d\r\n%s\r\n", n, req.header)
		body := req.body
		if req.hold {
			body = body[:len(body)/2]
		}
		b.Write(body)
		wire = b.Bytes()
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Write while reading: a server that refuses early stops reading.
	go func() { _, _ = conn.Write(wire) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer from %s: %v", addr, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body from %s: %v", addr, err)
	}
	return resp, body
}

// TestEnvelopeSameFromBothAPIs is issue 19's acceptance 4: each class of
// malformed request gets the same status and the same error envelope from
// the control plane and from the sidecar, including the refusals net/http
// makes before any handler runs.
func TestEnvelopeSameFromBothAPIs(t *testing.T) {
	a := newTwoAPIs(t)
	bigBody := []byte(`{"command":"true","stdin":"` + strings.Repeat("x", 16<<20) + `"}`)
	tlsHello := append([]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), bytes.Repeat([]byte{0xa7, '\n', 0x13}, 40)...)
	tests := []struct {
		name       string
		req        rawRequest
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{"wrong method", rawRequest{method: "GET"}, 405, api.CodeMethodNotAllowed, "POST"},
		{"bad JSON", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"command":`)}, 400, api.CodeBadRequest, ""},
		{"wrong content type", rawRequest{method: "POST", contentType: "text/plain", body: []byte(`{"command":"true"}`)}, 415, api.CodeUnsupportedMediaType, ""},
		{"wrong field type", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"command":5}`)}, 422, api.CodeValidation, ""},
		{"empty command", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"command":" "}`)}, 422, api.CodeValidation, ""},
		{"oversize body declared", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{}`), declared: 17 << 20}, 413, api.CodePayloadTooLarge, ""},
		{"oversize body sent", rawRequest{method: "POST", contentType: "application/json", body: bigBody}, 413, api.CodePayloadTooLarge, ""},
		{"oversize headers", rawRequest{method: "POST", header: "X-Big: " + strings.Repeat("a", 100<<10) + "\r\n", body: []byte(`{}`)}, 431, api.CodeHeadersTooLarge, ""},
		{"invalid UTF-8", rawRequest{method: "POST", contentType: "application/json", body: []byte("{\"command\":\"echo \xff\xfe\"}")}, 400, api.CodeBadRequest, ""},
		{"lone surrogate escape", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"command":"echo \udc00"}`)}, 400, api.CodeBadRequest, ""},
		{"slow body", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"command":"true","stdin":"abcdefgh"}`), hold: true}, 408, api.CodeRequestTimeout, ""},
		{"TLS handshake on the plain port", rawRequest{raw: tlsHello}, 400, api.CodeBadRequest, ""},
		{"malformed request line", rawRequest{raw: []byte("POST\r\n\r\n")}, 400, api.CodeBadRequest, ""},
		{"no Host header", rawRequest{raw: []byte("GET /health HTTP/1.1\r\n\r\n")}, 400, api.CodeBadRequest, ""},
		// Other routes than exec.
		{"wrong method, file create", rawRequest{method: "DELETE", path: "/files", sidecarPath: "/file-create"}, 405, api.CodeMethodNotAllowed, "POST"},
		{"bad regex, grep", rawRequest{method: "POST", contentType: "application/json", body: []byte(`{"pattern":"("}`), path: "/files/grep", sidecarPath: "/grep"}, 422, api.CodeValidation, ""},
		{"JSON array, ls", rawRequest{method: "POST", contentType: "application/json", body: []byte(`[]`), path: "/files/ls", sidecarPath: "/ls"}, 400, api.CodeBadRequest, ""},
		{"invalid UTF-8, file create", rawRequest{method: "POST", contentType: "application/json", body: []byte("{\"path\":\"/workspace/u\",\"content\":\"a\xffb\"}"), path: "/files", sidecarPath: "/file-create"}, 400, api.CodeBadRequest, ""},
		{"no path, raw upload", rawRequest{method: "PUT", contentType: "application/octet-stream", body: []byte("data"), path: "/files/raw", sidecarPath: "/files/raw"}, 400, api.CodeBadRequest, ""},
		{"invalid UTF-8 path, raw upload", rawRequest{method: "PUT", contentType: "application/octet-stream", body: []byte("data"), path: "/files/raw?path=/workspace/a%FFb", sidecarPath: "/files/raw?path=/workspace/a%FFb"}, 400, api.CodeBadRequest, ""},
		{"path outside the roots, raw upload", rawRequest{method: "PUT", contentType: "application/octet-stream", body: []byte("data"), path: "/files/raw?path=/etc/x", sidecarPath: "/files/raw?path=/etc/x"}, 400, api.CodeBadRequest, ""},
		{"wrong content type, process start", rawRequest{method: "POST", contentType: "text/plain", body: []byte(`{"command":"true"}`), path: "/processes", sidecarPath: "/process/start"}, 415, api.CodeUnsupportedMediaType, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.declared == 0 {
				tt.req.declared = -1
			}
			var got [2]*api.Error
			for i, toSidecar := range []bool{false, true} {
				who := map[bool]string{false: "control plane", true: "sidecar"}[toSidecar]
				resp, body := a.exchange(t, toSidecar, tt.req)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("%s: status %d, want %d: %s", who, resp.StatusCode, tt.wantStatus, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s: Content-Type %q, want application/json", who, ct)
				}
				if allow := resp.Header.Get("Allow"); allow != tt.wantAllow {
					t.Errorf("%s: Allow %q, want %q", who, allow, tt.wantAllow)
				}
				var env api.ErrorEnvelope
				if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
					t.Fatalf("%s: not an error envelope: %s", who, body)
				}
				e := env.Error
				if e.Code != tt.wantCode || e.Message == "" || e.Hint == "" {
					t.Errorf("%s: code %q message %q hint %q; want code %q, a message and a hint", who, e.Code, e.Message, e.Hint, tt.wantCode)
				}
				if e.RequestID == "" || e.RequestID != resp.Header.Get("X-Request-ID") {
					t.Errorf("%s: request_id %q, X-Request-ID %q: want equal and set", who, e.RequestID, resp.Header.Get("X-Request-ID"))
				}
				got[i] = e
			}
			if got[0].Code != got[1].Code || got[0].Hint != got[1].Hint {
				t.Errorf("control plane and sidecar differ:\n  %+v\n  %+v", got[0], got[1])
			}
		})
	}
}

// TestBodyDeadlineSparesLongStreams: the body deadline ends with the
// body, so an exec that streams for longer than it is not cut (net/http
// cancels a request whose connection read fails, and it keeps reading in
// the background while the handler answers).
func TestBodyDeadlineSparesLongStreams(t *testing.T) {
	a := newTwoAPIs(t)
	body := `{"command":"sleep 1; echo done"}`
	req, err := http.NewRequest("POST", "http://"+a.serverAddr+"/v1/sandboxes/"+a.sandboxID+"/exec", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.e.KeyA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream cut: %v (so far %s)", err, out)
	}
	if !bytes.Contains(out, []byte(`"data":"done\n"`)) || !bytes.Contains(out, []byte(`{"type":"exit","exit_code":0`)) {
		t.Errorf("stream = %s, want the output and a zero exit", out)
	}
}

// TestQueryParamErrors: a query parameter out of range is 422
// validation_error with a hint and its loc under "query" (the webhook
// deliveries' said "body", the audit log's had no hint).
func TestQueryParamErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookConfig())
	hook := subscribe(t, e, e.KeyA, "http://127.0.0.1:9/hook", api.EventSandboxCreated)
	sb := e.create(e.KeyA, api.CreateSandboxRequest{})
	for _, tc := range []struct{ path, param string }{
		{"/v1/webhooks/" + hook.ID + "/deliveries?limit=0", "limit"},
		{"/v1/webhooks/" + hook.ID + "/deliveries?limit=abc", "limit"},
		{"/v1/webhooks/" + hook.ID + "/deliveries?offset=-1", "offset"},
		{sandboxPath(sb.ID, "/log") + "?limit=0", "limit"},
		{sandboxPath(sb.ID, "/log") + "?offset=x", "offset"},
	} {
		resp, body := e.do("GET", tc.path, e.KeyA, nil)
		ae := wantError(t, resp, body, http.StatusUnprocessableEntity, api.CodeValidation)
		var details []api.FieldError
		b, _ := json.Marshal(ae.Details)
		mustUnmarshal(t, b, &details)
		if ae.Hint == "" || len(details) != 1 || !slices.Equal(details[0].Loc, []string{"query", tc.param}) {
			t.Errorf("GET %s: hint %q, details %s; want a hint and loc [query %s]", tc.path, ae.Hint, b, tc.param)
		}
	}
}
