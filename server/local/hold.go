//go:build linux

package local

import (
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/server/model"
)

// A refill yields to the sandboxes' calls (bench/issue27/session9-refill9.md):
// a member's start costs about 80 ms of CPU, most of it in this process and
// the spawner (disk, loop mount, cgroups, the jail's clone, the health
// poll), and on a small host every exec round trip beside it takes about
// twice as long. Neither the member's cgroup nor the filler's goroutine
// can be made to yield by priority (session 8), so the filler waits
// instead: while calls to sidecars are in flight, or ended less than
// refillQuiet ago, it starts no member, as long as the pool still holds
// its reserve (a quarter of its size, rounded up). Claims are served
// from the reserve meanwhile; below it a refill is urgent and starts at
// once. A member waits at most refillHold, so a host whose calls never
// pause still refills its pool, one member per refillHold.
const (
	refillQuiet = 100 * time.Millisecond
	refillHold  = 10 * time.Second
)

// callsIdle reports how long no call to a sidecar has been in flight (0
// while one is). The control plane gives it (WatchCalls).
type callsIdle func() time.Duration

// WatchCalls implements model.CallWatcher: the warm pool's refills wait
// for calls to pause (see refillQuiet).
func (d *Driver) WatchCalls(idle func() time.Duration) {
	if d.pool != nil && idle != nil {
		f := callsIdle(idle)
		d.pool.calls.Store(&f)
	}
}

// callWatch is what the pool's filler keeps of the control plane's calls.
type callWatch struct {
	calls atomic.Pointer[callsIdle] // nil: nothing to wait for
	hold  time.Duration             // refillHold; tests shorten it
}

// reserve is how many ready members a pool of size keeps whatever the
// calls: below it, refills do not wait.
func reserve(size int) int { return (size + 3) / 4 }

// holdFor is how much longer the filler should wait before it starts a
// member, with ready of size members ready, having waited held for this
// member already; idle is how long calls have paused (callsIdle).
func holdFor(idle time.Duration, ready, size int, held, limit time.Duration) time.Duration {
	if ready < reserve(size) || held >= limit || idle >= refillQuiet {
		return 0
	}
	return min(refillQuiet-idle, limit-held)
}

// holdFor is the pool's holdFor now.
func (p *pool) holdFor(held time.Duration) time.Duration {
	idle := p.calls.Load()
	if idle == nil {
		return 0
	}
	p.mu.Lock()
	ready := len(p.ready)
	p.mu.Unlock()
	return holdFor((*idle)(), ready, p.size, held, p.hold)
}

var _ model.CallWatcher = (*Driver)(nil)
