package authz

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// ErrCredentialRevoked is the cause of a request context's cancellation
// when its credential was revoked.
var ErrCredentialRevoked = errors.New("the request's credential was revoked")

// ErrCredentialExpired is the cause when the request's API key expired. It
// is a revocation (errors.Is ErrCredentialRevoked) to everything that
// handles one; only what the client is told differs (StreamEnded).
var ErrCredentialExpired = fmt.Errorf("the request's API key expired: %w", ErrCredentialRevoked)

// SurvivingContext is parent's values with a cancellation of its own: it
// ends when parent does, unless parent ended because its credential was
// revoked.
func SurvivingContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() {
		if !errors.Is(context.Cause(parent), ErrCredentialRevoked) {
			cancel()
		}
	})
	return ctx, func() {
		stop()
		cancel()
	}
}

// ErrStreamRevoked ends a stream whose credential was revoked.
var ErrStreamRevoked = &api.Error{
	Status: http.StatusUnauthorized, Code: api.CodeInvalidAPIKey,
	Message: "the credential of this stream was revoked; the stream ends here",
	Hint:    "a command it started runs on and is in the audit log; use a valid key",
}

// ErrStreamExpired ends a stream whose API key expired.
var ErrStreamExpired = &api.Error{
	Status: http.StatusUnauthorized, Code: api.CodeInvalidAPIKey,
	Message: "the API key of this stream expired; the stream ends here",
	Hint:    "a command it started runs on and is in the audit log; make a new key with `boxkite keys create`, or sign in again with `boxkite login`",
}

// StreamEnded is what a stream whose request ctx ended with a revocation
// is told: that its key expired, or that its credential was revoked.
func StreamEnded(ctx context.Context) *api.Error {
	if errors.Is(context.Cause(ctx), ErrCredentialExpired) {
		return ErrStreamExpired
	}
	return ErrStreamRevoked
}

// SessionEndReason is the close reason of a terminal session (a
// WebSocket) whose request ctx ended with a revocation.
func SessionEndReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), ErrCredentialExpired) {
		return "the API key of this session expired"
	}
	return "the credential of this session was revoked"
}
