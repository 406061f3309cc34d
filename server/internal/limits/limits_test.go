package limits

import (
	"testing"
	"time"
)

// TestRateLimiterRefund: a refunded request leaves room for another in
// the same window; a refund after the window ended, or with nothing
// counted, gives nothing back.
func TestRateLimiterRefund(t *testing.T) {
	l := NewRateLimiter()
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 2 {
		if ok, _, _ := l.Allow("src", 2, t0); !ok {
			t.Fatalf("request %d refused under the limit", i)
		}
	}
	if ok, _, reset := l.Allow("src", 2, t0.Add(time.Second)); ok || reset != 59*time.Second {
		t.Fatalf("third request: ok %v, reset %v; want refused, 59s", ok, reset)
	}
	l.Refund("src", t0.Add(2*time.Second))
	if ok, remaining, _ := l.Allow("src", 2, t0.Add(3*time.Second)); !ok || remaining != 0 {
		t.Fatalf("after a refund: ok %v, remaining %d; want allowed, 0", ok, remaining)
	}
	l.Refund("other", t0) // nothing counted: no window made
	if ok, remaining, _ := l.Allow("other", 2, t0); !ok || remaining != 1 {
		t.Errorf("a refund with nothing counted gave room: ok %v, remaining %d; want allowed, 1", ok, remaining)
	}
	l.Refund("src", t0.Add(time.Minute)) // the window has ended
	if ok, remaining, _ := l.Allow("src", 2, t0.Add(time.Minute)); !ok || remaining != 1 {
		t.Errorf("new window: ok %v, remaining %d; want allowed, 1", ok, remaining)
	}
}
