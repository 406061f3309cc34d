package server

import (
	"context"
	"errors"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// A LossWatcher is a Driver that notices, while the server runs, sandboxes
// that left the substrate without the server deleting them: a pod deleted
// behind its back, evicted, or failed. The server marks them lost, as
// reconcile does at start-up for those that went while it was down.
type LossWatcher interface {
	// WatchLost calls lost with the id of each sandbox that went, until
	// ctx is done or the watch breaks (an error; the server watches again).
	WatchLost(ctx context.Context, lost func(id string)) error
}

// lostGrace is how long a sandbox reported gone waits before it is marked
// lost. The server deleting a sandbox removes it from the substrate first
// and records it right after, so a deletion by any server sharing the
// store (this one too) is on record by then and is left alone.
const lostGrace = 2 * time.Second

// watchLost marks sandboxes lost as the driver reports them, until ctx is
// done. Drivers that cannot tell (the local driver's sandboxes are this
// process's children) are not watched.
func (s *Server) watchLost(ctx context.Context) {
	d := s.driver
	if cd, ok := d.(countingDriver); ok {
		d = cd.Driver
	}
	lw, ok := d.(LossWatcher)
	if !ok {
		return
	}
	pending := make(chan struct{}, 64) // bounds the marks in flight
	defer func() {
		for range cap(pending) {
			pending <- struct{}{}
		}
	}()
	for ctx.Err() == nil {
		err := lw.WatchLost(ctx, func(id string) {
			pending <- struct{}{}
			go func() {
				defer func() { <-pending }()
				s.markLost(ctx, id)
			}()
		})
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "watch for lost sandboxes", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// markLost records sandbox id as lost once lostGrace has passed, unless it
// was destroyed meanwhile.
func (s *Server) markLost(ctx context.Context, id string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(lostGrace):
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	switch err := s.destroy(ctx, id, api.StatusLost, ReasonLost); {
	case err == nil:
		s.log.WarnContext(ctx, "sandbox lost: it left the substrate while the server ran", "sandbox", id)
	case errors.Is(err, errNotActive), errors.Is(err, ErrNotFound):
		// destroyed on purpose, or never ours
	default:
		s.log.ErrorContext(ctx, "mark sandbox lost", "sandbox", id, "err", err)
	}
}
