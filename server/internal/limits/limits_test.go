package limits

import (
	"net/http"
	"net/http/httptest"
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

// TestClientSourceIPv6Prefix: two addresses of one IPv6 /64 are one
// source and share one budget, so a host rotating through its /64 cannot
// take a fresh budget with each address; another /64, and an IPv4
// address, have their own.
func TestClientSourceIPv6Prefix(t *testing.T) {
	req := func(addr string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/auth/login", nil)
		r.RemoteAddr = addr
		return r
	}
	l := NewRateLimiter()
	t0 := time.Unix(1_800_000_000, 0)
	for i, addr := range []string{"[2001:db8:1:2::1]:40000", "[2001:db8:1:2:ffff:1:2:3]:40001"} {
		if ok, _, _ := l.Allow(ClientSource(req(addr)), 2, t0); !ok {
			t.Fatalf("request %d (%s) refused under the limit", i, addr)
		}
	}
	if ok, _, _ := l.Allow(ClientSource(req("[2001:db8:1:2:aaaa::9]:40002")), 2, t0); ok {
		t.Errorf("a third address of the same /64 got a budget of its own")
	}
	for _, addr := range []string{"[2001:db8:1:3::1]:40000", "192.0.2.7:40000", "[::ffff:192.0.2.8]:1"} {
		if ok, _, _ := l.Allow(ClientSource(req(addr)), 2, t0); !ok {
			t.Errorf("%s refused: it is another source", addr)
		}
	}
	if got := ClientSource(req("192.0.2.7:5")); got != "192.0.2.7" {
		t.Errorf("ClientSource of an IPv4 address = %q, want 192.0.2.7", got)
	}
}
