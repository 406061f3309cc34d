// Package netsource names the source a network limit counts a client
// against: the bastion's pre-authentication limits and the E2B signed-URL
// failure limit share it, so both count the same clients as one.
package netsource

import (
	"net"
	"net/netip"
)

// Key is the source of a client at addr ("host:port" or a bare host):
// its IPv4 address, or the /64 of an IPv6 address, since a host is
// usually given a whole /64 (as OpenSSH's PerSourceNetBlockSize 32:64).
// An address that does not parse is its own key.
func Key(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
