// Package ctxsleep is a wait that a context cuts short: the client's
// retry back-off and the E2B facade's CPU window share it. Standard
// library only.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends first (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
