package authz

import (
	"context"
	"errors"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
)

// ErrCredentialRevoked is the cause of a request context's cancellation
// when its credential was revoked.
var ErrCredentialRevoked = errors.New("the request's credential was revoked")

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
