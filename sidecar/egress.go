package sidecar

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/boxkite/boxkite/internal/acceptloop"
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
	// Out of descriptors (EMFILE: an agent holding connections to the
	// port does that), a failed accept is retried: returning would end
	// the sandbox's egress for good.
	acceptloop.Serve(l, func(err error) { log.Warn("accept egress connection", "err", err) }, func(c net.Conn) {
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
	})
}
