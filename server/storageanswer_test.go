package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// TestStorageAnswer: a request that fails because the database cannot
// take writes, or the host has no space, is answered with what happened
// and a hint (507 insufficient_storage, 503 service_unavailable), not a
// bare 500 internal_error: on a full disk `POST /v1/api-keys`, `/v1/secrets`,
// `/v1/webhooks` and snapshot creates answered 500. Other errors keep
// the 500, and API errors go out as they are.
func TestStorageAnswer(t *testing.T) {
	sqliteFull := errors.New("database or disk is full (13)")
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"database full", fmt.Errorf("create api key: %w", fmt.Errorf("%w: %w", model.ErrStoreFull, sqliteFull)), 507, api.CodeInsufficientStorage},
		{"host full", fmt.Errorf("copy snapshot: %w", syscall.ENOSPC), 507, api.CodeInsufficientStorage},
		{"database read-only", fmt.Errorf("insert secret: %w", model.ErrStoreReadOnly), 503, api.CodeServiceUnavailable},
		{"database failing", fmt.Errorf("insert webhook: %w", model.ErrStoreIO), 503, api.CodeServiceUnavailable},
		{"other", errors.New("something else"), 500, api.CodeInternal},
		{"api error", api.Errorf(http.StatusConflict, api.CodeConflict, "taken"), 409, api.CodeConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w := httptest.NewRecorder()
			s.writeError(w, httptest.NewRequest(http.MethodPost, "/v1/api-keys", nil), tc.err)
			var env api.ErrorEnvelope
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Error == nil {
				t.Fatalf("answer %s: %v", w.Body, err)
			}
			if w.Code != tc.status || env.Error.Code != tc.code {
				t.Errorf("answer %d %s, want %d %s", w.Code, env.Error.Code, tc.status, tc.code)
			}
			if tc.status != 500 && tc.status != 409 && env.Error.Hint == "" {
				t.Error("no hint")
			}
			if strings.Contains(env.Error.Message, "(13)") {
				t.Errorf("the driver's error reached the client: %q", env.Error.Message)
			}
		})
	}
}
