package sidecar

import (
	"context"
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
