package sidecar

import (
	"context"
	"errors"
	"testing"
)

func TestCallsIdle(t *testing.T) {
	var c Calls
	if got := c.Idle(); got <= 0 {
		t.Fatalf("Idle() with no call yet = %v, want > 0", got)
	}
	_, untrackA := c.Track(context.Background(), "a")
	_, untrackB := c.Track(context.Background(), "b")
	if got := c.Idle(); got != 0 {
		t.Fatalf("Idle() with two calls in flight = %v, want 0", got)
	}
	untrackA()
	untrackA() // a second call forgets nothing more
	if got := c.Idle(); got != 0 {
		t.Fatalf("Idle() with one call in flight = %v, want 0", got)
	}
	untrackB()
	if got := c.Idle(); got <= 0 {
		t.Fatalf("Idle() after the calls ended = %v, want > 0", got)
	}
}

// TestCallsWatch: a watcher hears why its sandbox's calls end, is no
// call in flight, and hears nothing once stopped or for other sandboxes.
func TestCallsWatch(t *testing.T) {
	var c Calls
	var heard []error
	stop := c.Watch("a", func(cause error) { heard = append(heard, cause) })
	if got := c.Idle(); got <= 0 {
		t.Fatalf("Idle() with only a watcher = %v, want > 0", got)
	}
	paused := errors.New("paused")
	c.Cancel("b", errors.New("other"))
	c.Cancel("a", paused)
	stop()
	c.Cancel("a", errors.New("after stop"))
	if len(heard) != 1 || heard[0] != paused {
		t.Fatalf("the watcher heard %v, want [paused]", heard)
	}
	if len(c.watchers) != 0 {
		t.Fatalf("watchers left after stop: %v", c.watchers)
	}
}
