package egress

import (
	"fmt"
	"net"
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
	if name == "" || strings.ContainsAny(name, "*/ @[]") {
		return Grant{}, fmt.Errorf("parse grant %q: bad host", s)
	}
	return Grant{Host: host, Port: port}, nil
}

func (g Grant) String() string { return net.JoinHostPort(g.Host, strconv.Itoa(g.Port)) }

// Allowlist is a sandbox's grants.
type Allowlist []Grant

// Allows reports whether host:port is granted. IP literals never are:
// grants name hosts.
func (l Allowlist) Allows(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(host) != nil {
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
