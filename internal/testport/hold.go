package testport

import (
	"net"
	"sync"
	"testing"
)

// Taken is a PickN whose first answer holds, at one index, a port another
// test's server holds: what a store or a cluster started on picked ports
// meets when another test binds one of them between the pick and the bind.
// Hold makes one; the tests of a start that must try again on other ports
// (objtest's and kubetest's TestStartPortTaken) pass its PickN.
type Taken struct {
	port  int
	index int
	mu    sync.Mutex
	picks int
}

// Hold listens on a port of 127.0.0.1 until t ends, accepting and closing
// connections as another test's server would, and returns a Taken that
// puts it at index of its first answer.
func Hold(t testing.TB, index int) *Taken {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testport: hold a port: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return &Taken{port: ln.Addr().(*net.TCPAddr).Port, index: index}
}

// Port is the held port.
func (p *Taken) Port() int { return p.port }

// PickN is testport.PickN, but the first answer has the held port at the
// index Hold was given.
func (p *Taken) PickN(n int) ([]int, error) {
	p.mu.Lock()
	p.picks++
	first := p.picks == 1
	p.mu.Unlock()
	ports, err := PickN(n)
	if err == nil && first {
		ports[p.index] = p.port
	}
	return ports, err
}

// Picks counts the calls of PickN.
func (p *Taken) Picks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.picks
}
