package sidecar

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxkite/boxkite/client/api"
)

func response(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body))}
}

// TestRefusal: a sidecar's 4xx with its error envelope is passed on with
// the status; anything else (2xx, 5xx, no envelope, no code) is not.
func TestRefusal(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   *api.Error
	}{
		{"client error", 400, `{"error":{"code":"invalid_request","message":"bad cwd"}}`, &api.Error{Status: 400, Code: "invalid_request", Message: "bad cwd"}},
		{"budget", 429, `{"error":{"code":"rate_limited","message":"exec budget","hint":"wait"}}`, &api.Error{Status: 429, Code: "rate_limited", Message: "exec budget", Hint: "wait"}},
		{"server error", 500, `{"error":{"code":"internal","message":"x"}}`, nil},
		{"ok", 200, `{"error":{"code":"x","message":"x"}}`, nil},
		{"no envelope", 404, `not found`, nil},
		{"no code", 403, `{"error":{"message":"x"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Refusal(response(tt.status, tt.body))); diff != "" {
				t.Errorf("Refusal (-want +got):\n%s", diff)
			}
		})
	}
	if got := Refusal(&http.Response{StatusCode: 400}); got != nil {
		t.Errorf("Refusal of a response without a body = %v, want nil", got)
	}
}

// FuzzRefusal: any body is read without panicking, and what is passed on
// is a client error with a code.
func FuzzRefusal(f *testing.F) {
	f.Add(400, `{"error":{"code":"invalid_request","message":"bad cwd"}}`)
	f.Add(500, `{}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		e := Refusal(response(status, body))
		if e != nil && (e.Status < 400 || e.Status >= 500 || e.Code == "") {
			t.Fatalf("Refusal(%d, %q) = %+v", status, body, e)
		}
	})
}
