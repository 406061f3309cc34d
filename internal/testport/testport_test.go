package testport

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// TestPickBelowEphemeral: picks lie outside the range the kernel hands to
// listens on port 0 and to outgoing connections, are free, and are random.
func TestPickBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 20 {
		port, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if port < Floor || port >= low {
			t.Fatalf("Pick = %d, want in [%d, %d)", port, Floor, low)
		}
		seen[port] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave %d distinct ports; want random picks", len(seen))
	}
}

// TestPickSkipsTaken: a port in use is never handed out.
func TestPickSkipsTaken(t *testing.T) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	taken := map[int]bool{}
	for range 50 {
		port, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if taken[port] {
			t.Fatalf("Pick handed out %d, which is held", port)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("listen on picked port %d: %v", port, err)
		}
		held = append(held, l)
		taken[port] = true
	}
}

// TestPickNDistinct: the n ports of one PickN differ, though picks one
// after the other may repeat (each is only free when looked at).
func TestPickNDistinct(t *testing.T) {
	seq := []int{20001, 20001, 20002, 20001, 20003}
	i := 0
	pick := func() (int, error) { i++; return seq[i-1], nil }
	ports, err := pickN(3, pick)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ports) != "[20001 20002 20003]" {
		t.Fatalf("pickN(3) = %v, want [20001 20002 20003]", ports)
	}
	ports, err = PickN(8)
	if err != nil || len(ports) != 8 {
		t.Fatalf("PickN(8) = %v, %v", ports, err)
	}
}

// TestRefused: a dial to the port is refused, and no listener, with
// SO_REUSEADDR as Go's or without, can take the port while it is held.
func TestRefused(t *testing.T) {
	port, closer, err := Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial %s = %v, want ECONNREFUSED", addr, err)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Errorf("listen on the held port %d succeeded", port)
	}
}

// TestHold: the held port answers as a server, cannot be bound, and comes
// first at its index, then never again.
func TestHold(t *testing.T) {
	held := Hold(t, 1)
	if _, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held.Port()))); err == nil {
		t.Fatal("the held port could be bound")
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held.Port())))
	if err != nil {
		t.Fatalf("dial the held port: %v", err)
	}
	c.Close()
	first, err := held.PickN(3)
	if err != nil || first[1] != held.Port() {
		t.Fatalf("first PickN = %v, %v; want the held port %d at 1", first, err, held.Port())
	}
	second, err := held.PickN(3)
	if err != nil || slices.Contains(second, held.Port()) || held.Picks() != 2 {
		t.Fatalf("second PickN = %v, %v (%d picks); want no held port, 2 picks", second, err, held.Picks())
	}
}
