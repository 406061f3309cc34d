package egress

import (
	"net"
	"testing"
)

// closeCount is a listener that counts its Close calls.
type closeCount struct {
	net.Listener
	n int
}

func (c *closeCount) Close() error { c.n++; return nil }

// TestListeners: a replaced listener is closed, Close closes the
// sandbox's (once), CloseAll closes the rest; the zero value is usable.
func TestListeners(t *testing.T) {
	var ls Listeners
	ls.Close("none") // nothing to close
	a1, a2, b := &closeCount{}, &closeCount{}, &closeCount{}
	ls.Set("a", a1)
	ls.Set("a", a2)
	ls.Set("b", b)
	if a1.n != 1 || a2.n != 0 {
		t.Fatalf("after replacing a's listener: closes %d, %d; want 1, 0", a1.n, a2.n)
	}
	ls.Close("a")
	ls.Close("a")
	if a2.n != 1 {
		t.Errorf("a's listener closed %d times, want 1", a2.n)
	}
	ls.CloseAll()
	ls.CloseAll()
	if b.n != 1 {
		t.Errorf("b's listener closed %d times by CloseAll, want 1", b.n)
	}
}
