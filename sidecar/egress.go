package sidecar

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// EgressProxyAddr is where commands of a sandbox with granted egress find
// the proxy: a loopback port of the jail's own network namespace.
const EgressProxyAddr = "127.0.0.1:3128"

// EgressEnv returns the variables that point commands at the proxy. The
// jail has no other route out, so a tool that ignores them simply fails.
func EgressEnv() []string { return EgressEnvFor(EgressProxyAddr) }

// EgressEnvFor is EgressEnv for a proxy at addr ("host:port"): a pod's
// sidecar points commands straight at the control plane's proxy.
func EgressEnvFor(addr string) []string {
	u := "http://" + addr
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1",
	}
}

// ForwardEgress accepts connections on l and joins each to a new
// connection to the unix socket at socket (the host's egress proxy, which
// the jail's root can reach and commands cannot), until l is closed. A
// failed accept (out of descriptors) is retried, never the end.
func ForwardEgress(l net.Listener, socket string, log *slog.Logger) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var d net.Dialer
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors (EMFILE: an agent holding connections
			// to the port does that) or another passing failure. Returning
			// would end the sandbox's egress for good; wait and go on, as
			// net/http's server does.
			if delay == 0 {
				log.Warn("accept egress connection", "err", err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		wg.Go(func() {
			defer c.Close()
			up, err := d.DialContext(context.Background(), "unix", socket)
			if err != nil {
				log.Warn("reach egress proxy", "err", err)
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				_ = up.(*net.UnixConn).CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(c, up)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		})
	}
}
