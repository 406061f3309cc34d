//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// filler is what the warm pool and the prepared pool share: the members
// ready to take (T: a warm member's name, a prepared slot), the flag stop
// raises, and the goroutine that fills them.
type filler[T any] struct {
	mu     sync.Mutex
	ready  []T  // oldest first
	closed bool // stop has begun: members made from now on are deleted

	kick   chan struct{} // wakes the filler; buffered, one pending kick is enough
	cancel context.CancelFunc
	done   chan struct{} // closed when the filler has returned
}

// newFiller returns a filler whose goroutine cancel ends.
func newFiller[T any](cancel context.CancelFunc) filler[T] {
	return filler[T]{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
}

// wake tells the filler a member was taken.
func (f *filler[T]) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// stop ends the filler (the pool is what) and deletes every ready member
// with remove, all at once.
func (f *filler[T]) stop(ctx context.Context, what string, remove func(context.Context, T) error) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	select {
	case <-f.done:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", what, ctx.Err())
	}
	f.mu.Lock()
	members := f.ready
	f.ready = nil
	f.mu.Unlock()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = remove(ctx, m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// halt ends the filler and waits for it, deleting nothing: what the
// driver's process dying does to the pool (Driver.Release). The members
// made so far stay on disk, for the next driver's clearPool.
func (f *filler[T]) halt() {
	f.cancel()
	<-f.done
}

// idle waits until a member is taken (wake) and reports false once ctx
// ended instead.
func (f *filler[T]) idle(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-f.kick:
		return true
	}
}

// sleep waits d and reports false once ctx ended instead.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Pauses between a filler's failed attempts, so a broken host does not
// spin: doubled at each failure, from minRetry up to maxRetry.
const minRetry, maxRetry = 100 * time.Millisecond, 30 * time.Second
