package authz

import (
	"context"
	"errors"
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
