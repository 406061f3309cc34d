//go:build linux

package local

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestHoldFor(t *testing.T) {
	const limit = 10 * time.Second
	tests := []struct {
		name        string
		idle        time.Duration
		ready, size int
		held        time.Duration
		want        time.Duration
	}{
		{"calls in flight", 0, 3, 4, 0, refillQuiet},
		{"calls just ended", 30 * time.Millisecond, 3, 4, 0, refillQuiet - 30*time.Millisecond},
		{"calls paused", refillQuiet, 3, 4, 0, 0},
		{"no call yet", 1<<63 - 1, 3, 4, 0, 0},
		{"reserve left (40: 10)", 0, 10, 40, 0, refillQuiet},
		{"below the reserve (40: 10)", 0, 9, 40, 0, 0},
		{"pool of one, empty", 0, 0, 1, 0, 0},
		{"near the limit", 0, 3, 4, limit - time.Millisecond, time.Millisecond},
		{"limit reached", 0, 3, 4, limit, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdFor(tt.idle, tt.ready, tt.size, tt.held, limit); got != tt.want {
				t.Errorf("holdFor(%v, %d, %d, %v) = %v, want %v", tt.idle, tt.ready, tt.size, tt.held, got, tt.want)
			}
		})
	}
}

// consults counts the filler's looks at the calls, so a test can wait
// until it has decided to hold (no timed assertion).
type consults struct {
	n    atomic.Int64
	busy atomic.Bool
}

func (c *consults) idle() time.Duration {
	c.n.Add(1)
	if c.busy.Load() {
		return 0
	}
	return time.Hour
}

// waitHeld waits until the filler has looked at the calls three more
// times, or the pool is no longer at ready; then the pool must still
// hold ready members (it waited rather than refilled).
func waitHeld(t *testing.T, d *Driver, c *consults, ready int) {
	t.Helper()
	from := c.n.Load()
	deadline := time.Now().Add(30 * time.Second)
	for c.n.Load() < from+3 && d.WarmReady() == ready && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := d.WarmReady(); got != ready || c.n.Load() < from+3 {
		t.Fatalf("warm pool holds %d members after %d looks at the calls, want %d held while calls are in flight", got, c.n.Load()-from, ready)
	}
}

// While calls are in flight the pool refills only what its reserve lacks;
// once they pause, it fills.
func TestWarmPoolHoldsWhileBusy(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 4) // reserve 1
	waitPool(t, d, 4)
	c := &consults{}
	c.busy.Store(true)
	d.WatchCalls(c.idle)

	create(t, d, "a")
	waitHeld(t, d, c, 3)
	create(t, d, "b")
	create(t, d, "c")
	waitHeld(t, d, c, 1)
	create(t, d, "d") // the reserve is gone: refilled at once, then held
	waitPool(t, d, 1)
	waitHeld(t, d, c, 1)

	c.busy.Store(false)
	waitPool(t, d, 4)
}

// A member waits at most refillHold: a host whose calls never pause
// still refills its pool.
func TestWarmPoolHoldLimit(t *testing.T) {
	t.Parallel()
	d := newPoolDriver(t, t.TempDir(), 4)
	waitPool(t, d, 4)
	c := &consults{}
	c.busy.Store(true)
	d.pool.hold = 200 * time.Millisecond // before WatchCalls, which publishes it
	d.WatchCalls(c.idle)
	create(t, d, "a")
	create(t, d, "b")
	waitPool(t, d, 4)
	if c.n.Load() == 0 {
		t.Error("the filler refilled without looking at the calls")
	}
}
