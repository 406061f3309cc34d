package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/authz"
)

// TestAnswerRevocation: a handler's error caused by its credential ending
// mid-request (a read cut by the cancellation) is answered as the
// revocation, expiry or demotion it was, not as a 500; an API error the
// handler chose, or a cancellation for another cause, is left as it is.
func TestAnswerRevocation(t *testing.T) {
	cut := fmt.Errorf("load sandbox: %w", context.Canceled)
	chosen := api.Errorf(http.StatusNotFound, api.CodeNotFound, "sandbox sb-1 not found")
	for _, c := range []struct {
		name       string
		cause      error // the request ctx's cancellation cause; nil: not cancelled
		err        error
		wantStatus int // 0: the handler's error unchanged
		wantCode   string
	}{
		{name: "revoked", cause: authz.ErrCredentialRevoked, err: cut, wantStatus: http.StatusUnauthorized, wantCode: api.CodeInvalidAPIKey},
		{name: "expired", cause: authz.ErrCredentialExpired, err: cut, wantStatus: http.StatusUnauthorized, wantCode: api.CodeInvalidAPIKey},
		{name: "demoted", cause: authz.ErrCredentialDemoted, err: cut, wantStatus: http.StatusForbidden, wantCode: api.CodeForbidden},
		{name: "the handler's own API error", cause: authz.ErrCredentialRevoked, err: chosen},
		{name: "the client went", cause: context.Canceled, err: cut},
		{name: "not cancelled", err: cut},
		{name: "no error", cause: authz.ErrCredentialRevoked},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if c.cause != nil {
				cancel(c.cause)
			}
			r := httptest.NewRequest("GET", "/v1/sandboxes/sb-1", nil).WithContext(ctx)
			h := answerRevocation(func(http.ResponseWriter, *http.Request) error { return c.err })
			got := h(httptest.NewRecorder(), r)
			if c.wantStatus == 0 {
				if got != c.err {
					t.Fatalf("got %v, want the handler's %v unchanged", got, c.err)
				}
				return
			}
			ae, ok := errors.AsType[*api.Error](got)
			if !ok || ae.Status != c.wantStatus || ae.Code != c.wantCode || ae.Hint == "" {
				t.Fatalf("got %#v, want %d %s with a hint", got, c.wantStatus, c.wantCode)
			}
			if !errors.Is(got, context.Canceled) {
				t.Errorf("got %v, want the cause kept for the log", got)
			}
		})
	}
}
