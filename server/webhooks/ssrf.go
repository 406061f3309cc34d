package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/boxkite/boxkite/server/egress"
)

// MaxURLLen is the longest subscription URL.
const MaxURLLen = 2048

// unsafeTargetError refuses a delivery to an address the SSRF check rules
// out, saying why: a noun phrase such as egress.Refusal's ("a private
// address").
type unsafeTargetError struct{ why string }

func (e *unsafeTargetError) Error() string { return "webhook target is " + e.why }

func unsafeTarget(why string) error { return &unsafeTargetError{why} }

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
			return unsafeTarget("localhost, a loopback name")
		}
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := refusal(ip, allowLoopback, local); why != "" {
			return unsafeTarget(why)
		}
	}
	return nil
}

// unsafeURLHint is the hint of a subscription URL checkURL refused with
// err. A loopback
// target on a server that refuses them all is most often a receiver on
// the server's own machine, which the operator can let through for
// 127.0.0.1; the hint says how, in local mode too.
func unsafeURLHint(err error, raw string, allowLoopback bool) string {
	const public = "use a public http(s) URL; loopback, private and link-local addresses and the server's own host are refused"
	if _, target := errors.AsType[*unsafeTargetError](err); !target || allowLoopback {
		return public
	}
	host := strings.ToLower(hostOf(raw))
	ip, err := netip.ParseAddr(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || err == nil && ip.Unmap().IsLoopback() {
		return "a receiver at http://127.0.0.1 needs boxkite-server started with --webhook-allow-loopback " +
			"(in local mode: BOXKITE_SERVER_WEBHOOK_ALLOW_LOOPBACK=true boxkite up, after boxkite down); otherwise " + public
	}
	return public
}

// hostOf is raw's host, or "" when it does not parse.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// refusal says why a delivery may not go to ip, or "" if it may: it is
// egress.Refusal's (a forbidden address or one of the host's own, local),
// but 127.0.0.1 when the operator allowed loopback (tests).
func refusal(ip netip.Addr, allowLoopback bool, local []netip.Addr) string {
	if allowLoopback && ip.Unmap() == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
		return ""
	}
	return egress.Refusal(ip, local)
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
				return unsafeTarget("not an address (" + address + ")")
			}
			local, err := localAddrs()
			if err != nil {
				return err
			}
			if why := refusal(ap.Addr(), allowLoopback, local); why != "" {
				return unsafeTarget(why)
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
