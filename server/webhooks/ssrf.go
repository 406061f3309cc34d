package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MaxURLLen is the longest subscription URL.
const MaxURLLen = 2048

// errUnsafeTarget refuses a delivery to an address the SSRF check rules out.
var errUnsafeTarget = errors.New("webhook target is a loopback, private or link-local address, or the server's host")

// checkURL checks a subscription URL's form and, when its host is an IP
// literal, the address (local lists the host's own addresses); a name is
// checked when it is resolved, at every delivery (safeDialer), since what
// it resolves to may change.
func checkURL(raw string, allowLoopback bool, local []netip.Addr) error {
	if raw == "" || len(raw) > MaxURLLen {
		return fmt.Errorf("the URL must be 1 to %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("the URL must be http or https")
	}
	if u.User != nil {
		return errors.New("the URL must not carry credentials")
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("the URL has no host")
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		if !allowLoopback {
			return errUnsafeTarget
		}
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && !allowedAddr(ip, allowLoopback, local) {
		return errUnsafeTarget
	}
	return nil
}

// allowedAddr reports whether a delivery may go to ip: a public unicast
// address but the host's own (local: from the host, even a public one
// reaches what it binds to every address, past firewalls of outside
// traffic), or 127.0.0.1 when the operator allowed loopback (tests).
func allowedAddr(ip netip.Addr, allowLoopback bool, local []netip.Addr) bool {
	ip = ip.Unmap()
	if allowLoopback && ip == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		return true
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(),
		ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip.IsMulticast(), slices.Contains(local, ip):
		return false
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// blocked are ranges beyond the standard library's predicates: carrier-grade
// NAT, the benchmarking and documentation nets, 0/8, the 6to4 relay, NAT64.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("2002::/16"),
}

// safeClient is the HTTP client deliveries go through: the address each
// connection dials is checked after resolution (so a name that resolves to
// a private address, now or after a rebinding, is refused), no proxy from
// the environment, no redirects, timeout per attempt.
func safeClient(timeout time.Duration, allowLoopback bool, localAddrs func() ([]netip.Addr, error)) *http.Client {
	d := &net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errUnsafeTarget
			}
			local, err := localAddrs()
			if err != nil {
				return err
			}
			if !allowedAddr(ap.Addr(), allowLoopback, local) {
				return errUnsafeTarget
			}
			return nil
		},
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
