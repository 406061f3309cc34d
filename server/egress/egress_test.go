package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		allowed bool
	}{
		{"93.184.216.34", true},
		{"2606:4700::1111", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"10.0.0.1", false},
		{"172.16.5.5", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"fd00:ec2::254", false},
		{"fe80::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"100.64.0.1", false},
		{"255.255.255.255", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::5db8:d822", true},  // NAT64 of a public address
		{"::10.0.0.1", false},         // IPv4-compatible
		{"2002:0a00:0001::1", false},  // 6to4 of 10.0.0.1
	} {
		t.Run(tc.addr, func(t *testing.T) {
			why := Forbidden(netip.MustParseAddr(tc.addr))
			if (why == "") != tc.allowed {
				t.Errorf("Forbidden(%s) = %q, want allowed %v", tc.addr, why, tc.allowed)
			}
		})
	}
}

// TestRefusal: the one reason the egress proxy, the secrets broker and
// webhook deliveries give for an address nothing may reach.
func TestRefusal(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("93.184.216.99"), netip.MustParseAddr("2606:4700::99")}
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", "a loopback address"},
		{"::1", "a loopback address"},
		{"10.1.2.3", "a private address"},
		{"10.0.0.2", "a private address"}, // the host's too, private first
		{"fd00:ec2::254", "a private address"},
		{"169.254.169.254", "a link-local address"},
		{"fe80::1", "a link-local address"},
		{"::ffff:127.0.0.1", "a loopback address"},
		{"::ffff:169.254.169.254", "a link-local address"},
		{"64:ff9b::a9fe:a9fe", "an embedded link-local address"},
		{"93.184.216.99", "one of this host's own addresses"},
		{"::ffff:93.184.216.99", "one of this host's own addresses"},
		{"2606:4700::99", "one of this host's own addresses"},
		{"100.64.0.1", "a reserved address"},
		{"224.0.0.1", "a multicast address"},
		{"ff02::1", "a multicast address"},
		{"0.0.0.0", "an unspecified address"},
		{"::", "an unspecified address"},
		{"64:ff9b:1::1", "a local-use NAT64 address"},
		{"93.184.216.34", ""},
		{"2606:4700::1111", ""},
		{"::ffff:93.184.216.34", ""},
	} {
		if got := Refusal(netip.MustParseAddr(tc.addr), local); got != tc.want {
			t.Errorf("Refusal(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := Refusal(netip.MustParseAddr("93.184.216.99"), nil); got != "" {
		t.Errorf("Refusal of a public address, no local list = %q, want allowed", got)
	}
}

func TestAllowlist(t *testing.T) {
	var l Allowlist
	for _, s := range []string{"api.example.com", "*.svc.example.org:8443", "example.cafe"} {
		g, err := ParseGrant(s)
		if err != nil {
			t.Fatal(err)
		}
		l = append(l, g)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.example.com.", 443, true},
		{"api.example.com", 80, false},
		{"x.api.example.com", 443, false},
		{"a.svc.example.org", 8443, true},
		{"a.b.svc.example.org", 8443, true},
		{"svc.example.org", 8443, false},
		{"evilsvc.example.org", 8443, false},
		{"93.184.216.34", 443, false},
		{"example.cafe", 443, true}, // an all-hex top-level label is a name
		{"93.184.216.34.svc.example.org", 8443, true},
	} {
		if got := l.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("Allows(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	// An address spelled as C resolvers (inet_aton) read it is no name
	// either, though net.ParseIP does not read it: a grant naming it (as
	// recorded before ParseGrant refused one) lets nothing through.
	for _, h := range []string{"0x5db8d822", "1572395042", "93.0xb8.216.34", "0135.0270.0330.042", "93.12114978", "127.1"} {
		if (Allowlist{{Host: h, Port: 443}}).Allows(h, 443) {
			t.Errorf("a grant of %s allowed it: an IP address in another spelling", h)
		}
	}
	for _, bad := range []string{
		"", "*.", "a b", "x:0", "x:99999", "*", "a..b", ".a", "*..a",
		"127.1", "2130706433", "0x7f000001", "0X7F000001", "0177.0.0.1", "127.0.1:8443", "*.1", "*.0x1", "10.1.1",
	} {
		if _, err := ParseGrant(bad); err == nil {
			t.Errorf("ParseGrant(%q) succeeded", bad)
		}
	}
}

type mapResolver map[string]string

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := m[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// TestProxy drives CONNECT and plain-HTTP forwarding through a proxy
// whose test resolver maps names to a loopback server it may reach
// (Permit) and to forbidden addresses it may not.
func TestProxy(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from origin")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Decision
	p := &Proxy{
		Resolver: mapResolver{"test.example": "127.0.0.1", "meta.example": "169.254.169.254", "lan.example": "10.0.0.1"},
		Permit:   func(a netip.Addr) bool { return a.IsLoopback() },
	}
	var allow Allowlist
	for _, h := range []string{"test.example", "meta.example", "lan.example"} {
		allow = append(allow, Grant{Host: h, Port: atoi(t, port)})
	}
	done := make(chan struct{})
	go func() {
		p.Serve(l, allow, func(d Decision) { mu.Lock(); got = append(got, d); mu.Unlock() })
		close(done)
	}()

	// Plain HTTP through the proxy.
	proxyURL := "http://" + l.Addr().String()
	client := &http.Client{Transport: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse(proxyURL) }}}
	for _, tc := range []struct {
		host string
		want int
	}{
		{"test.example", 200},
		{"other.example", 403},
		{"meta.example", 403},
		{"lan.example", 403},
	} {
		resp, err := client.Get("http://" + net.JoinHostPort(tc.host, port) + "/")
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || (tc.want == 200 && string(body) != "hello from origin") {
			t.Errorf("%s: %d %q, want %d", tc.host, resp.StatusCode, body, tc.want)
		}
	}

	// CONNECT, then HTTP inside the tunnel.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT test.example:%s HTTP/1.1\r\nHost: test.example:%s\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port, port)
	all, _ := io.ReadAll(bufio.NewReader(c))
	c.Close()
	if !strings.HasPrefix(string(all), "HTTP/1.1 200 Connection established") || !strings.Contains(string(all), "hello from origin") {
		t.Errorf("CONNECT: %q", all)
	}

	l.Close()
	<-done
	want := []Decision{
		{Allowed: true, Host: "test.example", Reason: "granted", Addr: netip.MustParseAddr("127.0.0.1")},
		{Host: "other.example", Reason: "not granted"},
		{Host: "meta.example", Reason: "resolves to a link-local address", Addr: netip.MustParseAddr("169.254.169.254")},
		{Host: "lan.example", Reason: "resolves to a private address", Addr: netip.MustParseAddr("10.0.0.1")},
		{Allowed: true, Host: "test.example", Reason: "granted", Addr: netip.MustParseAddr("127.0.0.1")},
	}
	for i := range want {
		want[i].Port = atoi(t, port)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestProxyRefusesLoopbackWithoutPermit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := &Proxy{Resolver: mapResolver{"test.example": "127.0.0.1"}}
	ds := make(chan Decision, 1)
	go p.Serve(l, Allowlist{{Host: "test.example", Port: 80}}, func(x Decision) { ds <- x })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "GET http://test.example/ HTTP/1.1\r\nHost: test.example\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if d := <-ds; resp.StatusCode != http.StatusForbidden || d.Allowed || d.Reason != "resolves to a loopback address" {
		t.Errorf("got %d, decision %+v", resp.StatusCode, d)
	}
}

// TestProxyAdmit: while Admit refuses (the control plane's audit log is
// down), no request is looked at, dialled or reported.
func TestProxyAdmit(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := &Proxy{
		Resolver: mapResolver{"test.example": "127.0.0.1"}, Permit: func(netip.Addr) bool { return true },
		Admit: func() error { return errors.New("the audit log cannot be written") },
	}
	reported := make(chan Decision, 1)
	go p.Serve(l, Allowlist{{Host: "test.example", Port: 80}}, func(x Decision) { reported <- x })
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET http://test.example/ HTTP/1.1\r\nHost: test.example\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "audit log") {
		t.Errorf("got %d %q, want 503 naming the audit log", resp.StatusCode, body)
	}
	select {
	case d := <-reported:
		t.Errorf("a refused request was reported: %+v", d)
	default:
	}
}

// emfileOnce is a listener whose first Accept fails as one does when the
// process is out of descriptors.
type emfileOnce struct {
	net.Listener
	failed bool
}

func (l *emfileOnce) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestProxySurvivesEMFILE: the server's descriptors are shared by every
// sandbox's proxy, and Serve returned on the first failed accept, so one
// tenant running the server out of them ended the egress of whichever
// sandboxes' accepts failed meanwhile, until a restart.
func TestProxySurvivesEMFILE(t *testing.T) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Resolver: mapResolver{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Serve(&emfileOnce{Listener: tl}, nil, func(Decision) {})
	}()
	c, err := net.Dial("tcp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
	fmt.Fprint(c, "GET http://other.example/ HTTP/1.1\r\nHost: other.example\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("after a failed accept: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("after a failed accept: %d, want 403 (not granted)", resp.StatusCode)
	}
	tl.Close()
	<-done
}

// TestProxyConnectionLimit: a sandbox's connections were unbounded, each
// a descriptor of the server, so one tenant holding thousands ran the
// control plane out of them (its API, database and every other sandbox's
// egress). Past MaxConns a connection is answered 503 at once; closing
// one frees its slot.
func TestProxyConnectionLimit(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from origin")
	}))
	defer origin.Close()
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{
		Resolver: mapResolver{"test.example": "127.0.0.1"},
		Permit:   func(a netip.Addr) bool { return a.IsLoopback() },
		MaxConns: 2,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Serve(l, Allowlist{{Host: "test.example", Port: atoi(t, port)}}, func(Decision) {})
	}()
	deadline := time.Now().Add(30 * time.Second) // a hang guard only
	dial := func() net.Conn {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(deadline)
		return c
	}
	get := func(c net.Conn) (int, string) {
		fmt.Fprintf(c, "GET http://test.example:%s/ HTTP/1.1\r\nHost: test.example\r\n\r\n", port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// Two idle connections take both slots (Serve accepts in order, so
	// both are counted before the third is looked at).
	c1, c2 := dial(), dial()
	c3 := dial()
	all, _ := io.ReadAll(c3)
	c3.Close()
	if !strings.HasPrefix(string(all), "HTTP/1.1 503") || !strings.Contains(string(all), "2 egress connections open") {
		t.Errorf("third connection: %q, want a 503 naming the limit", all)
	}
	if code, body := get(c2); code != http.StatusOK || body != "hello from origin" {
		t.Errorf("a connection within the limit: %d %q", code, body)
	}
	c2.Close()
	c1.Close()
	// Once the proxy has seen them go, their slots serve again.
	for {
		c := dial()
		code, body := get(c)
		c.Close()
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after closing: %d %q", code, body)
		}
	}
	l.Close()
	<-done
}

// TestProxyRefusesHostsOwnAddress: a granted name that resolves to one of
// the host's own addresses (a public one, which Forbidden lets through)
// would reach the host's services bound to every address from inside,
// past firewalls that filter only traffic from outside. The address is
// a public one the test claims as the host's; the dialler is the test's,
// so nothing leaves the machine.
func TestProxyRefusesHostsOwnAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self, other := netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("93.184.216.35")
	var mu sync.Mutex
	var dialled []string
	p := &Proxy{
		Resolver:   mapResolver{"self.example": self.String(), "ipv6self.example": "::ffff:" + self.String(), "other.example": other.String()},
		LocalAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("10.0.0.2"), self}, nil },
		dialContext: func(_ context.Context, _, address string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, address)
			mu.Unlock()
			return nil, errors.New("the test dials nothing")
		},
	}
	ds := make(chan Decision, 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Serve(l, Allowlist{{Host: "self.example", Port: 443}, {Host: "ipv6self.example", Port: 443}, {Host: "other.example", Port: 443}}, func(d Decision) { ds <- d })
	}()
	for _, host := range []string{"self.example", "ipv6self.example", "other.example"} {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang guard only
		fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %[1]s:443\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		d := <-ds
		wantReason := "resolves to one of this host's own addresses"
		if host == "other.example" {
			wantReason = "connect failed" // the test's dialler refuses
		}
		if resp.StatusCode != http.StatusForbidden || d.Allowed || d.Reason != wantReason {
			t.Errorf("%s: %d, decision %+v, want 403 %q", host, resp.StatusCode, d, wantReason)
		}
	}
	l.Close()
	<-done
	if want := []string{"93.184.216.35:443"}; !slices.Equal(dialled, want) {
		t.Errorf("dialled %q, want only %q", dialled, want)
	}
}

// TestProxyBadRequests: a request the proxy cannot serve is answered 400,
// never hung up on, and one naming a target is audited as refused like a
// destination not granted (found from a sandbox: CONNECT localhost and
// CONNECT [localhost]:443 left no trace, the second no answer either).
func TestProxyBadRequests(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Decision
	p := &Proxy{Resolver: mapResolver{}}
	done := make(chan struct{})
	go func() {
		p.Serve(l, Allowlist{{Host: "localhost", Port: 443}}, func(d Decision) { mu.Lock(); got = append(got, d); mu.Unlock() })
		close(done)
	}()
	long := strings.Repeat("a", 300)
	for _, head := range []string{
		"CONNECT localhost HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"CONNECT localhost:99999 HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"CONNECT " + long + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT [localhost]:443 HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", // a TLS hello
	} {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, head)
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.HasPrefix(line, "HTTP/1.1 400 ") {
			t.Errorf("%q: answered %q, %v; want 400", head, line, err)
		}
	}
	l.Close()
	<-done
	want := []Decision{
		{Host: "localhost", Reason: "bad proxy request"},
		{Host: "localhost:99999", Reason: "bad proxy request"},
		{Host: "/", Reason: "bad proxy request"},
		{Host: long[:255], Reason: "bad proxy request"},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}
