package egress

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// A Grant lets a sandbox reach Host on Port. Host is a DNS name, or
// "*.suffix" for any name below suffix (not suffix itself).
type Grant struct {
	Host string
	Port int
}

// ParseGrant parses "host:port" or "host" (port 443).
func ParseGrant(s string) (Grant, error) {
	host, port := s, 443
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Grant{}, fmt.Errorf("parse grant %q: bad port", s)
		}
		host, port = h, n
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name := strings.TrimPrefix(host, "*.")
	if name == "" || strings.ContainsAny(name, "*/ @[]") || slices.Contains(strings.Split(name, "."), "") {
		return Grant{}, fmt.Errorf("parse grant %q: bad host", s)
	}
	if numericHost(name) && net.ParseIP(name) == nil {
		return Grant{}, fmt.Errorf("parse grant %q: an IP address in another spelling; grants name hosts", s)
	}
	return Grant{Host: host, Port: port}, nil
}

// numericHost reports whether host may be an IPv4 address in one of the
// spellings C resolvers read (inet_aton: 127.1, 2130706433, 0x7f000001,
// 0177.0.0.1) as well as the dotted quad: its last label is decimal
// digits, or 0x and hex digits. No DNS name is: a top-level label is
// never all-numeric (RFC 3696 §2). Without this, a grant or a CONNECT
// naming an address so would pass for a name, and a server whose
// resolver is the C library's (cgo, as nsswitch.conf may demand) would
// dial the address.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

func (g Grant) String() string { return net.JoinHostPort(g.Host, strconv.Itoa(g.Port)) }

// Allowlist is a sandbox's grants.
type Allowlist []Grant

// Allows reports whether host:port is granted. IP literals never are,
// in any spelling (numericHost): grants name hosts.
func (l Allowlist) Allows(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(host) != nil || numericHost(host) {
		return false
	}
	for _, g := range l {
		if g.Port != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(g.Host, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == g.Host {
			return true
		}
	}
	return false
}
