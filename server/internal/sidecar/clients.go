package sidecar

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxkite/boxkite/server/internal/pintls"
	"github.com/boxkite/boxkite/server/internal/unixsock"
	"github.com/boxkite/boxkite/server/model"
)

// Clients caches one HTTP client per sandbox, so requests reuse
// connections to the sidecar (a unix socket dial per exec would cost more
// than the exec itself). A local endpoint's client (no TLS) carries small
// requests on the caller's goroutine (leanTransport), the rest with
// net/http's Transport; a TLS endpoint's (the kube driver's) has the
// Transport alone.
type Clients struct {
	mu sync.Mutex
	m  map[string]*sidecarClient
}

type sidecarClient struct {
	ep       model.Endpoint
	client   *http.Client
	protocol atomic.Int32 // what its last answer stated (protocolTransport); -1 before one
}

func NewClients() *Clients { return &Clients{m: map[string]*sidecarClient{}} }

// Client returns the cached client for the sandbox, building one if the
// endpoint is new or changed.
func (c *Clients) Client(id string, ep model.Endpoint) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.m[id]; ok && sc.ep.Network == ep.Network && sc.ep.Address == ep.Address && bytes.Equal(sc.ep.CertPEM, ep.CertPEM) {
		return sc.client, nil
	}
	tr, err := sidecarTransport(ep)
	if err != nil {
		return nil, err
	}
	if old, ok := c.m[id]; ok {
		old.client.CloseIdleConnections()
	}
	// No Client.Timeout: every request carries a context deadline sized to
	// the operation (an exec may legitimately run for an hour).
	// Redirects are not followed: a sidecar has no reason to send one, and
	// following it would reach a path the route table did not choose.
	sc := &sidecarClient{ep: ep}
	sc.protocol.Store(-1)
	sc.client = &http.Client{
		Transport:     protocolTransport{rt: tr, seen: &sc.protocol},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.m[id] = sc
	return sc.client, nil
}

// Open dials a connection to the sandbox's sidecar ahead of its first
// request and keeps it idle for that request, so the request does not pay
// the dial (a warm pool member's, say). A no-op for an endpoint whose
// client keeps net/http's Transport (the kube driver's TLS endpoints).
func (c *Clients) Open(ctx context.Context, id string, ep model.Endpoint) error {
	cl, err := c.Client(id, ep)
	if err != nil {
		return err
	}
	if t, ok := cl.Transport.(protocolTransport).rt.(*leanTransport); ok {
		if err := t.open(ctx); err != nil {
			return fmt.Errorf("dial sidecar: %w", err)
		}
	}
	return nil
}

// Forget drops the sandbox's client and closes its idle connections.
func (c *Clients) Forget(id string) {
	c.mu.Lock()
	sc, ok := c.m[id]
	delete(c.m, id)
	c.mu.Unlock()
	if ok {
		sc.client.CloseIdleConnections()
	}
}

// sidecarTransport dials the endpoint whatever host the request URL names.
// A tcp endpoint with CertPEM (the kube driver's) is TLS pinned to exactly
// that certificate: the connection is wrapped in TLS as it is dialled, so
// every request, streams and WebSocket upgrades included, stays plain
// http:// to the code above. A tcp endpoint without one is plain HTTP
// (tests use it).
func sidecarTransport(ep model.Endpoint) (http.RoundTripper, error) {
	switch ep.Network {
	case "unix", "tcp":
	default:
		return nil, fmt.Errorf("sidecar endpoint network %q is not supported", ep.Network)
	}
	if ep.Address == "" {
		return nil, errors.New("sidecar endpoint has no address")
	}
	var pin *tls.Config
	if len(ep.CertPEM) > 0 {
		var err error
		if pin, err = pintls.Config(ep.CertPEM); err != nil {
			return nil, err
		}
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if ep.Network == "unix" {
				return unixsock.Dial(ctx, dialer, ep.Address)
			}
			conn, err := dialer.DialContext(ctx, ep.Network, ep.Address)
			if err != nil || pin == nil {
				return conn, err
			}
			tc := tls.Client(conn, pin)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, fmt.Errorf("sidecar TLS: %w", err)
			}
			return tc, nil
		},
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// Sidecar output is sent as it is produced; gzip would hold it back.
		DisableCompression: true,
	}
	if pin != nil {
		return tr, nil // the kube driver's: see leanTransport
	}
	// The local driver's unix sockets, and the plain TCP of tests, whose
	// fake sidecars thereby exercise the same client as the real ones.
	return &leanTransport{
		dial: func(ctx context.Context) (net.Conn, error) {
			if ep.Network == "unix" {
				return unixsock.Dial(ctx, dialer, ep.Address)
			}
			return dialer.DialContext(ctx, ep.Network, ep.Address)
		},
		fallback: tr,
	}, nil
}
