package faulttest

import (
	"context"
	"net"
	"strconv"
	"testing"
)

// TestUpPortTaken: the stack's port taken between the pick and `boxkite
// up`, as another test's server that picked it too would (or one that
// bound it while the stack's server was killed), does not fail the test
// that wanted the stack: it moves to another port, and its client follows.
func TestUpPortTaken(t *testing.T) {
	needRoot(t)
	s := newStack(t, "BOXKITE_SERVER_WARM_POOL=0")
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	s.port = heldPort
	s.up()
	if s.port == heldPort {
		t.Fatalf("the stack stayed on the held port %d", heldPort)
	}
	if _, err := s.client().ListSandboxes(context.Background(), true); err != nil {
		t.Fatalf("list sandboxes on the moved stack: %v", err)
	}
	s.down()
	s.wantNothingLeft()
}

// TestRemainsNotOthersListener: a listener on the stack's port that only
// another process holds (another test's server that picked the port once
// the stack let it go) is not read as the stack's leftover; the stack's
// own is (TestDownLeavesNothing checks that while the stack runs).
func TestRemainsNotOthersListener(t *testing.T) {
	s := newStack(t)
	held, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if left := s.remains(); len(left) > 0 {
		t.Errorf("another process's listener on the stack's port read as the stack's: %q", left)
	}
}
