package sidecar

import (
	"context"
	"math"
	"sync"
	"time"
)

// sandboxCalls are the calls in flight to each sandbox's sidecar, so they
// can be ended when the sandbox is frozen.
type Calls struct {
	mu   sync.Mutex
	next uint64
	m    map[string]map[uint64]context.CancelCauseFunc
	// ends holds the sandboxes this server is destroying, with the
	// answer their calls get meanwhile (see end).
	ends map[string]error
	// watchers are told why calls to a sandbox end (Watch).
	watchers map[string]map[uint64]func(error)
	// n is how many calls are in flight; ended is when the latest ended
	// (Idle).
	n     int
	ended time.Time
}

// Track returns ctx, cancellable through cancel(id, …), and the function
// that forgets it.
func (c *Calls) Track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if cause, ok := c.ends[id]; ok {
		c.mu.Unlock()
		cancel(cause)
		return ctx, func() {}
	}
	if c.m == nil {
		c.m = map[string]map[uint64]context.CancelCauseFunc{}
	}
	if c.m[id] == nil {
		c.m[id] = map[uint64]context.CancelCauseFunc{}
	}
	c.next++
	key := c.next
	c.m[id][key] = cancel
	c.n++
	c.mu.Unlock()
	return ctx, func() {
		now := time.Now()
		c.mu.Lock()
		if _, ok := c.m[id][key]; ok {
			c.n--
			c.ended = now
		}
		delete(c.m[id], key)
		if len(c.m[id]) == 0 {
			delete(c.m, id)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// Idle reports how long no call has been in flight: 0 while one is, and
// the longest duration if none has been yet (model.CallWatcher).
func (c *Calls) Idle() time.Duration {
	c.mu.Lock()
	n, ended := c.n, c.ended
	c.mu.Unlock()
	switch {
	case n > 0:
		return 0
	case ended.IsZero():
		return math.MaxInt64
	}
	return max(time.Since(ended), 1) // 0 means busy
}

// Cancel ends every call in flight to sandbox id with cause, and tells
// its watchers.
func (c *Calls) Cancel(id string, cause error) {
	c.mu.Lock()
	calls := make([]context.CancelCauseFunc, 0, len(c.m[id]))
	for _, cancel := range c.m[id] {
		calls = append(calls, cancel)
	}
	watchers := make([]func(error), 0, len(c.watchers[id]))
	for _, fn := range c.watchers[id] {
		watchers = append(watchers, fn)
	}
	c.mu.Unlock()
	for _, cancel := range calls {
		cancel(cause)
	}
	for _, fn := range watchers {
		fn(cause)
	}
}

// Watch calls fn with the cause each time the calls to sandbox id are
// ended (a pause, a freeze, a destroy), until stop is called. Unlike
// Track it is no call in flight (Idle ignores it): a WebSocket relay that
// may last hours watches for its sandbox being paused under it. fn must
// not block.
func (c *Calls) Watch(id string, fn func(cause error)) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watchers == nil {
		c.watchers = map[string]map[uint64]func(error){}
	}
	if c.watchers[id] == nil {
		c.watchers[id] = map[uint64]func(error){}
	}
	c.next++
	key := c.next
	c.watchers[id][key] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers[id], key)
		if len(c.watchers[id]) == 0 {
			delete(c.watchers, id)
		}
	}
}

// End ends every call in flight to sandbox id with cause, and every call
// that starts until the returned function is called: the sandbox is being
// destroyed on purpose, so a call that its sidecar's death cuts short is
// answered with cause rather than taken for a loss (ending).
func (c *Calls) End(id string, cause error) (done func()) {
	c.mu.Lock()
	if c.ends == nil {
		c.ends = map[string]error{}
	}
	_, already := c.ends[id]
	if !already {
		c.ends[id] = cause
	}
	c.mu.Unlock()
	c.Cancel(id, cause)
	if already {
		return func() {} // another destroy of id runs; it ends the mark
	}
	return func() {
		c.mu.Lock()
		delete(c.ends, id)
		c.mu.Unlock()
	}
}

// Ending returns the answer for calls to sandbox id while this server
// destroys it, or nil.
func (c *Calls) Ending(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ends[id]
}
