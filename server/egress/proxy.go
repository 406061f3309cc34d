package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boxkite/boxkite/internal/acceptloop"
)

// Decision is one connection the proxy let through or refused.
type Decision struct {
	Allowed bool
	Host    string
	Port    int
	Addr    netip.Addr // the address dialled; invalid when refused before
	Reason  string     // why it was refused, or "granted"
}

// A Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Proxy serves sandboxes' egress listeners. Its zero value is not usable;
// fill Resolver (nil means net.DefaultResolver) as needed.
type Proxy struct {
	Resolver Resolver
	// Permit, when set, overrides Forbidden for the addresses it returns
	// true for. Tests set it to reach loopback servers they start; image
	// builds (server/images) to reach the package mirrors the operator
	// configured, which may sit on private addresses. Outside tests it
	// must never let loopback or link-local (metadata) through, or the
	// proxy reaches the host.
	Permit func(netip.Addr) bool
	// LocalAddrs lists this host's own addresses, which no sandbox may
	// reach whatever they are: a name resolving to the host's public
	// address would reach every service the host binds to all its
	// addresses, from inside, past firewalls that only filter traffic
	// from outside. nil means the addresses of the host's interfaces.
	LocalAddrs func() ([]netip.Addr, error)
	// dialContext connects; nil means a net.Dialer's. Tests replace it.
	dialContext func(ctx context.Context, network, address string) (net.Conn, error)
	// DialTimeout bounds resolving and connecting; 0 means 10 s.
	DialTimeout time.Duration
	Log         *slog.Logger
	// MaxConns bounds the connections one Serve (one sandbox's listener)
	// holds at once; 0 means DefaultMaxConns. The server's descriptors
	// are shared by every sandbox, so past it a connection is answered
	// 503 and closed at once.
	MaxConns int
	// Admit, when set, is asked before each request is looked at; an
	// error refuses it (503) with its text. The control plane refuses
	// egress while its audit log, where decisions are recorded, cannot be
	// written.
	Admit func() error
}

const maxHeader = 64 << 10

// DefaultMaxConns is a sandbox's open egress connections when
// Proxy.MaxConns is 0: far more than package managers and browsers open
// (npm's maxsockets is 15), far fewer than the descriptors of a server
// with a few dozen sandboxes.
const DefaultMaxConns = 256

// Serve accepts connections on l until it is closed, letting through
// what allow grants and calling report with every decision. A failed
// accept (out of descriptors) is retried, never the end.
func (p *Proxy) Serve(l net.Listener, allow Allowlist, report func(Decision)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	limit := p.MaxConns
	if limit <= 0 {
		limit = DefaultMaxConns
	}
	slots := make(chan struct{}, limit)
	// Out of descriptors (EMFILE: the server's are shared by every
	// sandbox), a failed accept is retried: returning would end this
	// sandbox's egress until a restart.
	acceptloop.Serve(l, p.warnAccept, func(c net.Conn) {
		select {
		case slots <- struct{}{}:
		default:
			wg.Go(func() { refuseBusy(c, limit) })
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer c.Close()
			p.handle(c, allow, report)
		})
	})
}

func (p *Proxy) warnAccept(err error) {
	if p.Log != nil {
		p.Log.Warn("accept egress connection", "err", err)
	}
}

func (p *Proxy) handle(c net.Conn, allow Allowlist, report func(Decision)) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	// The limit bounds the request head only; what follows it (a TLS
	// handshake after CONNECT) stays in br and is forwarded.
	lr := &io.LimitedReader{R: c, N: maxHeader}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
			// Something not HTTP (a TLS hello for an https:// proxy URL),
			// or a target no URL holds (CONNECT [name]:443): told so,
			// not hung up on. It names no host to audit.
			writeStatus(c, http.StatusBadRequest, "bad proxy request")
		}
		return
	}
	lr.N = 1 << 62
	_ = c.SetReadDeadline(time.Time{})
	if p.Admit != nil {
		if err := p.Admit(); err != nil {
			writeStatus(c, http.StatusServiceUnavailable, "egress refused: "+err.Error())
			return
		}
	}
	connect := req.Method == http.MethodConnect
	host, port, ok := target(req)
	if !ok {
		// Refused like any other destination, and audited: the target
		// as asked for (CONNECT localhost, a port past 65535, an
		// origin-form GET), at most 255 bytes.
		asked := req.RequestURI
		if len(asked) > 255 {
			asked = strings.ToValidUTF8(asked[:255], "") // no character cut in two
		}
		report(Decision{Host: asked, Reason: "bad proxy request"})
		writeStatus(c, http.StatusBadRequest, "bad proxy request")
		return
	}
	d := Decision{Host: host, Port: port}
	up, err := p.dial(host, port, allow, &d)
	report(d)
	if err != nil {
		writeStatus(c, http.StatusForbidden, "egress refused: "+d.Reason)
		return
	}
	defer up.Close()
	if connect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else {
		req.Header.Del("Proxy-Connection")
		req.Header.Del("Proxy-Authorization")
		req.Close = true // one request per connection keeps framing simple
		if err := req.Write(up); err != nil {
			return
		}
	}
	splice(c, br, up)
}

// target returns the host and port a proxy request is for.
func target(req *http.Request) (string, int, bool) {
	var hostport string
	def := 80
	switch {
	case req.Method == http.MethodConnect:
		hostport, def = req.RequestURI, 0
	case req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "":
		return "", 0, false // origin-form or https: nothing a forward proxy serves
	default:
		hostport = req.URL.Host
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 {
			return "", 0, false
		}
		host, ps = hostport, strconv.Itoa(def)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, false
	}
	return host, port, true
}

// dial checks the grant, resolves, checks every address and connects to
// the first allowed one, filling d.
func (p *Proxy) dial(host string, port int, allow Allowlist, d *Decision) (net.Conn, error) {
	if !allow.Allows(host, port) {
		d.Reason = "not granted"
		return nil, errors.New(d.Reason)
	}
	timeout := p.DialTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var r Resolver = net.DefaultResolver
	if p.Resolver != nil {
		r = p.Resolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		d.Reason = "does not resolve"
		return nil, errors.New(d.Reason)
	}
	// Every address must pass: a name that resolves to one public and one
	// private address is refused outright rather than half used.
	local, err := p.localAddrs()
	if err != nil {
		d.Reason = "cannot list this host's addresses"
		return nil, errors.New(d.Reason)
	}
	for _, a := range addrs {
		if why := Refusal(a, local); why != "" && (p.Permit == nil || !p.Permit(a)) {
			d.Addr, d.Reason = a.Unmap(), "resolves to "+why
			return nil, errors.New(d.Reason)
		}
	}
	dial := p.dialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	var lastErr error
	for _, a := range addrs {
		c, err := dial(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			d.Allowed, d.Addr, d.Reason = true, a.Unmap(), "granted"
			return c, nil
		}
		lastErr = err
	}
	d.Reason = "connect failed"
	return nil, lastErr
}

// refuseBusy answers a connection past the limit 503 and closes it,
// after reading what the client sent meanwhile (for a second at most),
// so that closing does not reset the connection before it read the answer.
func refuseBusy(c net.Conn, limit int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	writeStatus(c, http.StatusServiceUnavailable,
		"egress refused: this sandbox has "+strconv.Itoa(limit)+" egress connections open, the most it may")
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, maxHeader))
}

// localAddrs returns this host's own addresses, unmapped.
func (p *Proxy) localAddrs() ([]netip.Addr, error) {
	if p.LocalAddrs != nil {
		return p.LocalAddrs()
	}
	return InterfaceAddrs()
}

// InterfaceAddrs returns the addresses of this host's interfaces,
// unmapped: addresses nothing a sandbox asks for may reach (the proxy,
// the secrets broker), since from the host itself even its public ones
// reach what it binds to every address, past firewalls of outside
// traffic.
func InterfaceAddrs() ([]netip.Addr, error) {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list host addresses: %w", err)
	}
	var out []netip.Addr
	for _, ia := range ifaddrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}

func writeStatus(w io.Writer, code int, msg string) {
	_, _ = io.WriteString(w, "HTTP/1.1 "+strconv.Itoa(code)+" "+http.StatusText(code)+
		"\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(msg)+1)+"\r\n\r\n"+msg+"\n")
}

// splice copies both ways until either side is done.
func splice(client net.Conn, buffered io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, buffered)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, up)
		if cw, ok := client.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
