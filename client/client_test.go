package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/testport"
	"github.com/google/go-cmp/cmp"
)

func newServer(t *testing.T, h http.HandlerFunc) *client.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &client.Client{BaseURL: srv.URL, APIKey: "bxk_live_test", UserAgent: "boxkite-test/1"}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Write([]byte(`{"status":"healthy"}`))
	})
	h, err := c.Health(context.Background())
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if h.Status != "healthy" {
		t.Errorf("Health().Status = %q, want healthy", h.Status)
	}
	if a := got.Get("Authorization"); a != "Bearer bxk_live_test" {
		t.Errorf("Authorization = %q, want %q", a, "Bearer bxk_live_test")
	}
	if ua := got.Get("User-Agent"); ua != "boxkite-test/1" {
		t.Errorf("User-Agent = %q, want boxkite-test/1", ua)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   *api.Error
	}{
		{
			name:   "envelope",
			status: 404,
			body:   `{"error":{"code":"not_found","message":"sandbox not found","hint":"list them with boxkite session ls","request_id":"r1"}}`,
			want:   &api.Error{Status: 404, Code: "not_found", Message: "sandbox not found", Hint: "list them with boxkite session ls", RequestID: "r1"},
		},
		{
			name:   "request id from header",
			status: 401,
			header: map[string]string{"X-Request-ID": "r2"},
			body:   `{"error":{"code":"invalid_api_key","message":"invalid API key"}}`,
			want:   &api.Error{Status: 401, Code: "invalid_api_key", Message: "invalid API key", RequestID: "r2"},
		},
		{
			name:   "html from a proxy",
			status: 502,
			header: map[string]string{"Content-Type": "text/html; charset=utf-8", "X-Request-ID": "proxy-1"},
			body:   "<html><body><h1>502 Bad Gateway</h1></body></html>",
			want: &api.Error{
				Status: 502, Code: client.CodeBadResponse, RequestID: "proxy-1",
				Message: "the server at BASE answered 502 text/html, not boxkite's JSON",
				Hint:    client.BadResponseHint,
			},
		},
		{
			name:   "plain text, type sniffed",
			status: 404,
			body:   "404 page not found\n",
			want: &api.Error{
				Status: 404, Code: client.CodeBadResponse,
				Message: "the server at BASE answered 404 text/plain, not boxkite's JSON",
				Hint:    client.BadResponseHint,
			},
		},
		{
			name:   "empty 404",
			status: 404,
			want:   &api.Error{Status: 404, Code: api.CodeNotFound, Message: "unexpected response from the server: 404 Not Found"},
		},
		{
			name:   "reference 429 quirk",
			status: 429,
			body:   `{"detail":{"error":{"code":"rate_limited","message":"too many requests"}}}`,
			want:   &api.Error{Status: 429, Code: "rate_limited", Message: "too many requests"},
		},
		{
			name:   "json that is not an envelope",
			status: 403,
			header: map[string]string{"Content-Type": "application/json"},
			body:   `{"message":"nope"}`,
			want:   &api.Error{Status: 403, Code: api.CodeForbidden, Message: "unexpected response from the server: 403 Forbidden"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			_, err := c.Sandbox(context.Background(), "abc")
			apiErr, ok := errors.AsType[*api.Error](err)
			if !ok {
				t.Fatalf("Sandbox() error = %v (%T), want *api.Error", err, err)
			}
			if want := tt.want; strings.Contains(want.Message, "BASE") {
				cp := *want
				cp.Message = strings.Replace(want.Message, "BASE", c.BaseURL, 1)
				tt.want = &cp
			}
			if diff := cmp.Diff(tt.want, apiErr); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWebPageIsNotBoxkite: a 2xx web page where JSON belongs (a static
// site or a single-page app at the base URL answers 200 index.html to
// every path) is CodeBadResponse, for a call that decodes the answer and
// one that does not: a delete must not report success.
func TestWebPageIsNotBoxkite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, ctype, body string }{
		{"html", "text/html; charset=utf-8", "<!doctype html><html><body><div id=app></div></body></html>"},
		{"plain text", "text/plain", "OK"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				io.WriteString(w, tt.body)
			})
			_, err := c.ListSandboxes(context.Background(), false)
			e, ok := errors.AsType[*api.Error](err)
			if !ok || e.Code != client.CodeBadResponse || e.Status != 200 || e.Hint != client.BadResponseHint {
				t.Fatalf("ListSandboxes() error = %#v, want bad_response with status 200 and the hint", err)
			}
			want := "the server at " + c.BaseURL + " answered 200 " + strings.Split(tt.ctype, ";")[0] + ", not boxkite's JSON"
			if e.Message != want {
				t.Errorf("message = %q, want %q", e.Message, want)
			}
			err = c.DeleteSandbox(context.Background(), "abc")
			if tt.name == "html" {
				if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != client.CodeBadResponse {
					t.Errorf("DeleteSandbox() error = %v, want bad_response: a web page is no deletion", err)
				}
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	// Held by a socket that never listens: no other test's listener can
	// take it before the dial.
	port, held, err := testport.Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	c := client.New("http://"+addr, "bxk_live_x")
	_, err = c.ListSandboxes(context.Background(), true)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("ListSandboxes() error = %v, want ECONNREFUSED", err)
	}
	ce, ok := errors.AsType[*client.ConnError](err)
	if !ok {
		t.Fatalf("ListSandboxes() error = %T, want *client.ConnError", err)
	}
	if ce.URL != "http://"+addr {
		t.Errorf("ConnError.URL = %q, want %q", ce.URL, "http://"+addr)
	}
	// The MCP tools print it below the error (tools.withHint).
	if h := ce.Hint(); !strings.Contains(h, "boxkite up") {
		t.Errorf("ConnError.Hint() = %q, want it to name boxkite up", h)
	}
	if _, err := c.ExecStream(context.Background(), "x", api.ExecRequest{Command: "true"}, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("ExecStream() error = %v, want ECONNREFUSED", err)
	}
}

func TestContextCanceledIsNotConnError(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.ListSandboxes(ctx, true)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ListSandboxes(canceled) error = %v, want context.Canceled", err)
	}
	if _, ok := errors.AsType[*client.ConnError](err); ok {
		t.Errorf("ListSandboxes(canceled) error is a *ConnError: %v", err)
	}
}

func TestCreateSandboxes(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateSandboxRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.WriteHeader(http.StatusCreated)
		if req.Count <= 1 {
			json.NewEncoder(w).Encode(api.Sandbox{ID: "sb-1", Label: req.Label})
			return
		}
		var out []api.Sandbox
		for i := range req.Count {
			out = append(out, api.Sandbox{ID: "sb-" + string(rune('1'+i)), Label: req.Label})
		}
		json.NewEncoder(w).Encode(out)
	})
	ctx := context.Background()
	one, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Label: "a"})
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	if diff := cmp.Diff(&api.Sandbox{ID: "sb-1", Label: "a"}, one); diff != "" {
		t.Errorf("CreateSandbox (-want +got):\n%s", diff)
	}
	many, err := c.CreateSandboxes(ctx, api.CreateSandboxRequest{Label: "b", Count: 3})
	if err != nil {
		t.Fatalf("CreateSandboxes: %v", err)
	}
	want := []api.Sandbox{{ID: "sb-1", Label: "b"}, {ID: "sb-2", Label: "b"}, {ID: "sb-3", Label: "b"}}
	if diff := cmp.Diff(want, many); diff != "" {
		t.Errorf("CreateSandboxes (-want +got):\n%s", diff)
	}
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Count: 2}); err == nil {
		t.Error("CreateSandbox(count 2) succeeded, want an error")
	}
}

func TestSandboxRoutes(t *testing.T) {
	t.Parallel()
	var calls []string
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		call := r.Method + " " + r.URL.Path
		if q := r.URL.RawQuery; q != "" {
			call += "?" + q
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			call += " " + strings.TrimSpace(string(b))
		}
		calls = append(calls, call)
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/v1/sandboxes":
			w.Write([]byte(`[{"id":"a","status":"active"}]`))
		default:
			w.Write([]byte(`{"id":"a","status":"active","lifetime_minutes":90}`))
		}
	})
	ctx := context.Background()
	if _, err := c.ListSandboxes(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListSandboxes(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sandbox(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSandbox(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	sb, err := c.ExtendSandbox(ctx, "a", 90)
	if err != nil {
		t.Fatal(err)
	}
	if sb.LifetimeMinutes != 90 {
		t.Errorf("ExtendSandbox().LifetimeMinutes = %d, want 90", sb.LifetimeMinutes)
	}
	want := []string{
		"GET /v1/sandboxes?active_only=true",
		"GET /v1/sandboxes?active_only=false",
		"GET /v1/sandboxes/a/b", // path-escaped on the wire, decoded by the server
		"DELETE /v1/sandboxes/a",
		`POST /v1/sandboxes/a/extend {"lifetime_minutes":90}`,
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestStreamWebPageIsNotBoxkite: a streaming call answered by a web page
// or another server's "200 OK" text is bad_response, as a unary call is,
// not the stream reader's decode error (exec said "invalid character '<'",
// the process stream and the image log took the page as their output).
func TestStreamWebPageIsNotBoxkite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	calls := map[string]func(c *client.Client) error{
		"ExecStream": func(c *client.Client) error {
			_, err := c.ExecStream(ctx, "sb", api.ExecRequest{Command: "true"}, func(api.ExecEvent) error { return nil })
			return err
		},
		"StreamProcess": func(c *client.Client) error {
			_, err := c.StreamProcess(ctx, "sb", "p1", 0, func(api.ProcessEvent) error { return nil })
			return err
		},
		"WatchLog": func(c *client.Client) error {
			return c.WatchLog(ctx, "sb", "", func(api.LogEntry) error { return nil })
		},
		"ImageLogs": func(c *client.Client) error {
			return c.ImageLogs(ctx, "img", true, io.Discard)
		},
	}
	pages := []struct{ name, ctype, body string }{
		{"html", "text/html; charset=utf-8", "<!doctype html><html><body><div id=app></div></body></html>"},
		{"json", "application/json", `{"ok":true}`},
		{"no type", "", "OK\n"},
	}
	for name, call := range calls {
		for _, p := range pages {
			if name == "ExecStream" && p.ctype == "application/json" {
				continue // a server that does not stream answers the plain result
			}
			t.Run(name+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header()["Content-Type"] = []string{p.ctype}
					io.WriteString(w, p.body)
				})
				err := call(c)
				e, ok := errors.AsType[*api.Error](err)
				if !ok || e.Code != client.CodeBadResponse || e.Status != 200 || e.Hint != client.BadResponseHint {
					t.Fatalf("%s error = %#v, want bad_response with status 200 and the hint", name, err)
				}
				if !strings.Contains(e.Message, "the server at "+c.BaseURL+" answered 200 ") {
					t.Errorf("message = %q, want it to name the base URL and the status", e.Message)
				}
			})
		}
	}
}

// TestDownloadWebPageIsNotBoxkite: a download answered by a static site's
// 200 page is bad_response, not the page's bytes handed over as the file
// (boxkite sends files as application/octet-stream, whatever their name).
func TestDownloadWebPageIsNotBoxkite(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body><div id=app></div></body></html>")
	})
	d, err := c.DownloadFile(context.Background(), "sb", "index.html")
	if d != nil {
		d.Close()
	}
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != client.CodeBadResponse || e.Status != 200 {
		t.Fatalf("DownloadFile() error = %#v, want bad_response with status 200", err)
	}
}

// TestDialWebPageIsNotBoxkite: a terminal or interactive exec whose
// WebSocket dial a static site answers 200 with its page is bad_response,
// not the dialer's "expected handshake response status code 101 but got
// 200" as a connection error.
func TestDialWebPageIsNotBoxkite(t *testing.T) {
	t.Parallel()
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body><div id=app></div></body></html>")
	})
	ctx := context.Background()
	_, err := c.Attach(ctx, "sb", false)
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != client.CodeBadResponse || e.Status != 200 {
		t.Errorf("Attach() error = %#v, want bad_response with status 200", err)
	}
	_, err = c.StartInteractive(ctx, "sb", api.InteractiveRequest{Command: "sh"})
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != client.CodeBadResponse || e.Status != 200 {
		t.Errorf("StartInteractive() error = %#v, want bad_response with status 200", err)
	}
}
