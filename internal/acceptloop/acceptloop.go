// Package acceptloop accepts a listener's connections until it is closed,
// retrying a failed accept (out of descriptors: EMFILE, ENFILE) instead of
// returning, as net/http's server does. The egress proxy of the control
// plane and the sidecar's egress forwarder serve with it: returning there
// would end a sandbox's egress until a restart. Standard library only.
package acceptloop

import (
	"errors"
	"net"
	"time"
)

// The backoff's bounds: the first retry waits minDelay, each next one twice
// the last, at most maxDelay (net/http's server's).
const (
	minDelay = 5 * time.Millisecond
	maxDelay = time.Second
)

// Serve accepts connections on l and hands each to handle, until l is
// closed. A failed accept is retried after a delay (5 ms doubling to 1 s,
// back to 5 ms after a success); warn, when not nil, is told
// the first failure of each run of them. handle runs on Serve's goroutine:
// it starts its own to serve the connection.
func Serve(l net.Listener, warn func(error), handle func(net.Conn)) {
	serve(l, warn, handle, time.Sleep)
}

func serve(l net.Listener, warn func(error), handle func(net.Conn), sleep func(time.Duration)) {
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if delay == 0 && warn != nil {
				warn(err)
			}
			delay = next(delay)
			sleep(delay)
			continue
		}
		delay = 0
		handle(c)
	}
}

// next is the delay after a failed accept that followed delay (0: the
// first failure).
func next(delay time.Duration) time.Duration {
	return min(max(2*delay, minDelay), maxDelay)
}
