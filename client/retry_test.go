package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
)

// TestRetries: with MaxRetries set, a 429 and a 503 of work not performed
// are sent again after Retry-After; a 503 of work performed, a 4xx, a
// streamed body and a client without MaxRetries are not.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxRetries int
		status     int
		code       string // default: the status's usual code
		noWait     bool   // no Retry-After
		details    map[string]any
		upload     bool
		wantCalls  int64
		wantErr    string
	}{
		{name: "a fair-use limit is not retried", maxRetries: 3, status: 429, code: api.CodeConcurrentSandboxLimit, noWait: true, wantCalls: 1, wantErr: api.CodeConcurrentSandboxLimit},
		{name: "secrets_unavailable is not retried", maxRetries: 3, status: 503, code: api.CodeSecretsUnavailable, noWait: true, wantCalls: 1, wantErr: api.CodeSecretsUnavailable},
		{name: "429 retried", maxRetries: 3, status: 429, wantCalls: 2},
		{name: "503 not performed retried", maxRetries: 3, status: 503, details: map[string]any{"performed": false}, wantCalls: 2},
		{name: "503 performed not retried", maxRetries: 3, status: 503, details: map[string]any{"performed": true}, wantCalls: 1, wantErr: api.CodeAuditUnavailable},
		{name: "no retries by default", status: 429, wantCalls: 1, wantErr: api.CodeRateLimited},
		{name: "409 not retried", maxRetries: 3, status: 409, wantCalls: 1, wantErr: api.CodeConflict},
		{name: "a streamed body is not retried", maxRetries: 3, status: 429, upload: true, wantCalls: 1, wantErr: api.CodeRateLimited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					code := tc.code
					if code == "" {
						code = map[int]string{429: api.CodeRateLimited, 503: api.CodeAuditUnavailable, 409: api.CodeConflict}[tc.status]
					}
					if !tc.noWait {
						w.Header().Set(api.HeaderRetryAfter, "1")
					}
					writeJSON(w, tc.status, api.ErrorEnvelope{Error: &api.Error{Code: code, Message: "no", Details: tc.details}})
					return
				}
				writeJSON(w, http.StatusAccepted, api.Image{ID: "img_1"})
			}))
			defer srv.Close()
			c := client.New(srv.URL, "k")
			c.MaxRetries = tc.maxRetries
			start := time.Now()
			var err error
			if tc.upload {
				_, err = c.ImportImage(context.Background(), "x", &slowReader{})
			} else {
				_, err = c.CreateImage(context.Background(), api.CreateImageRequest{Label: "x"})
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("the server got %d calls, want %d", got, tc.wantCalls)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if took := time.Since(start); took < time.Second {
					t.Errorf("the retry came after %v; Retry-After said 1 s", took)
				}
				return
			}
			e, ok := errors.AsType[*api.Error](err)
			if !ok || e.Code != tc.wantErr {
				t.Errorf("err = %v, want code %s", err, tc.wantErr)
			}
		})
	}
}

// slowReader is a streamed body: one byte, then EOF.
type slowReader struct{ done bool }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	p[0] = 'x'
	return 1, nil
}

// TestIdempotencyKey: WithIdempotencyKey's key goes out on POSTs only.
func TestIdempotencyKey(t *testing.T) {
	got := map[string]string{}
	c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got[r.Method] = r.Header.Get(api.HeaderIdempotencyKey)
		writeJSON(w, http.StatusOK, api.Sandbox{ID: "sbx_1"})
	})
	ctx := client.WithIdempotencyKey(context.Background(), "key-1")
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sandbox(ctx, "sbx_1"); err != nil {
		t.Fatal(err)
	}
	if got["POST"] != "key-1" || got["GET"] != "" {
		t.Errorf("Idempotency-Key sent: %v; want it on the POST only", got)
	}
}

// TestServerTooOld: an answer from a release older than MinServerVersion
// fails every kind of call with CodeServerTooOld and a hint; dev builds,
// pseudo-versions and newer releases pass.
func TestServerTooOld(t *testing.T) {
	for _, tc := range []struct {
		version string
		tooOld  bool
	}{
		{"0.0.9", true},
		{"v0.0.1", true},
		{client.MinServerVersion, false},
		{"v1.2.3", false},
		{"dev", false},
		{"v0.0.0-20260101000000-abcdef123456", false},
		{"", false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.version != "" {
					w.Header().Set(api.HeaderServerVersion, tc.version)
				}
				writeJSON(w, http.StatusOK, []api.Sandbox{})
			})
			_, err := c.ListSandboxes(context.Background(), false)
			_, derr := c.DownloadFile(context.Background(), "sbx_1", "/x")
			for _, err := range []error{err, derr} {
				e, ok := errors.AsType[*api.Error](err)
				switch {
				case tc.tooOld && (!ok || e.Code != client.CodeServerTooOld || e.Hint == ""):
					t.Errorf("err = %v, want %s with a hint", err, client.CodeServerTooOld)
				case !tc.tooOld && err != nil:
					t.Errorf("err = %v", err)
				}
			}
		})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
