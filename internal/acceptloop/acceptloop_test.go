package acceptloop

import (
	"errors"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// flaky is a listener whose Accept fails with each of errs in turn, then
// hands out conns, then reports itself closed.
type flaky struct {
	net.Listener
	errs  []error
	conns []net.Conn
}

func (l *flaky) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	if len(l.conns) > 0 {
		c := l.conns[0]
		l.conns = l.conns[1:]
		return c, nil
	}
	return nil, net.ErrClosed
}

func emfile() error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

// TestServeRetries: N accepts fail with EMFILE, then one succeeds: the
// connection is handled, the delays double from minDelay to maxDelay, the
// first failure alone is told, and Serve returns once the listener is closed.
func TestServeRetries(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	const n = 12
	l := &flaky{conns: []net.Conn{c1}}
	for range n {
		l.errs = append(l.errs, emfile())
	}
	var slept []time.Duration
	var warned []error
	var handled []net.Conn
	serve(l, func(err error) { warned = append(warned, err) },
		func(c net.Conn) { handled = append(handled, c) },
		func(d time.Duration) { slept = append(slept, d) })
	if len(handled) != 1 || handled[0] != c1 {
		t.Errorf("handled %v, want the one connection", handled)
	}
	if len(warned) != 1 || !errors.Is(warned[0], syscall.EMFILE) {
		t.Errorf("warned %v, want the first EMFILE once", warned)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(slept, want) {
		t.Errorf("slept %v, want %v", slept, want)
	}
}

// TestServeResets: after a success the next failure waits minDelay again
// and is told again; a nil warn is allowed.
func TestServeResets(t *testing.T) {
	a1, a2 := net.Pipe()
	b1, b2 := net.Pipe()
	for _, c := range []net.Conn{a1, a2, b1, b2} {
		defer c.Close()
	}
	l := &flaky{errs: []error{emfile(), emfile(), nil, emfile()}, conns: []net.Conn{a1, b1}}
	var slept []time.Duration
	var handled int
	serve(l, nil, func(net.Conn) { handled++ }, func(d time.Duration) { slept = append(slept, d) })
	if handled != 2 {
		t.Errorf("handled %d connections, want 2", handled)
	}
	if want := []time.Duration{minDelay, 2 * minDelay, minDelay}; !slices.Equal(slept, want) {
		t.Errorf("slept %v, want %v", slept, want)
	}
}

// TestServeReal: Serve with the real sleep on a real listener: a failed
// accept, then a connection, then Close ends it.
func TestServeReal(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &flaky{Listener: tl, errs: []error{emfile()}}
	got := make(chan net.Conn, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(&realAfter{l}, nil, func(c net.Conn) { got <- c })
	}()
	c, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-got:
		s.Close()
	case <-time.After(30 * time.Second): // a hang guard only
		t.Fatal("no connection handled after a failed accept")
	}
	tl.Close()
	<-done
}

// realAfter accepts from the real listener once flaky's errors are spent.
type realAfter struct{ *flaky }

func (l *realAfter) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		return l.flaky.Accept()
	}
	return l.Listener.Accept()
}
