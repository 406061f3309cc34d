package authz

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
)

// ErrCredentialRevoked is the cause of a request context's cancellation
// when its credential was revoked.
var ErrCredentialRevoked = errors.New("the request's credential was revoked")

// ErrCredentialExpired is the cause when the request's API key expired. It
// is a revocation (errors.Is ErrCredentialRevoked) to everything that
// handles one; only what the client is told differs (StreamEnded).
var ErrCredentialExpired = fmt.Errorf("the request's API key expired: %w", ErrCredentialRevoked)

// ErrCredentialDemoted is the cause when the holder of the request's
// admin key of an organization was demoted to member: what the key held
// ends as at a revocation (errors.Is ErrCredentialRevoked), though the
// key stays valid, as a member's.
var ErrCredentialDemoted = fmt.Errorf("the request's API key was demoted to a member's: %w", ErrCredentialRevoked)

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

// ErrStreamDemoted ends a stream whose admin key's holder was demoted.
var ErrStreamDemoted = &api.Error{
	Status: http.StatusForbidden, Code: api.CodeForbidden,
	Message: "the holder of this stream's admin key was demoted to member in the organization; the stream ends here",
	Hint:    "a command it started runs on and is in the audit log; open it again, as a member's key may, or ask an owner for the admin role",
}

// StreamEnded is what a stream whose request ctx ended with a revocation
// is told: that its key expired or was demoted, or that its credential was
// revoked.
func StreamEnded(ctx context.Context) *api.Error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCredentialExpired):
		return withReauthHint(ctx, ErrStreamExpired)
	case errors.Is(cause, ErrCredentialDemoted):
		return ErrStreamDemoted
	}
	return withReauthHint(ctx, ErrStreamRevoked)
}

// withReauthHint is e with ctx's apihttp.WithReauthHint hint, or e when
// it has none.
func withReauthHint(ctx context.Context, e *api.Error) *api.Error {
	hint, ok := apihttp.ReauthHint(ctx)
	if !ok {
		return e
	}
	c := *e
	c.Hint = hint
	return &c
}

// RequestEnded is the answer to a request that failed because its ctx
// ended with a revocation (a store read cut by the cancellation, say),
// or nil when err is nil or an API error already, or ctx did not end so: the
// client is told its credential went, not a 500.
func RequestEnded(ctx context.Context, err error) *api.Error {
	if _, ok := errors.AsType[*api.Error](err); ok || err == nil {
		return nil
	}
	switch cause := context.Cause(ctx); {
	case !errors.Is(cause, ErrCredentialRevoked):
		return nil
	case errors.Is(cause, ErrCredentialExpired):
		return withReauthHint(ctx, &api.Error{
			Status: http.StatusUnauthorized, Code: api.CodeInvalidAPIKey,
			Message: "the API key of this request expired while it ran; it stopped here",
			Hint:    "what it did before is in the audit log; make a new key with `boxkite keys create`, or sign in again with `boxkite login`",
		})
	case errors.Is(cause, ErrCredentialDemoted):
		return &api.Error{
			Status: http.StatusForbidden, Code: api.CodeForbidden,
			Message: "the holder of this request's admin key was demoted to member in the organization while it ran; it stopped here",
			Hint:    "what it did before is in the audit log; retry as a member's key may, or ask an owner for the admin role",
		}
	}
	return withReauthHint(ctx, &api.Error{
		Status: http.StatusUnauthorized, Code: api.CodeInvalidAPIKey,
		Message: "the credential of this request was revoked while it ran; it stopped here",
		Hint:    "what it did before is in the audit log; use a valid key",
	})
}

// SessionEndReason is the close reason of a terminal session (a
// WebSocket) whose request ctx ended with a revocation.
func SessionEndReason(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCredentialExpired):
		return "the API key of this session expired"
	case errors.Is(cause, ErrCredentialDemoted):
		return "the holder of this session's admin key was demoted to member"
	}
	return "the credential of this session was revoked"
}
