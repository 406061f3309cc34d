package egress

import (
	"net/netip"
	"slices"
	"strings"
)

// forbiddenPrefixes are ranges a sandbox may never reach beyond what
// netip's predicates already cover.
var forbiddenPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard
}

// Embeddings of an IPv4 address in IPv6 that some path may translate back.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	v4compat  = netip.MustParsePrefix("::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Forbidden reports why a sandbox may not connect to a, or "" if it may.
// It covers loopback, private (RFC 1918, fc00::/7 — which holds the AWS
// metadata address fd00:ec2::254), link-local (169.254/16 — the other
// metadata address), unspecified, multicast, CGNAT and the reserved ranges,
// also when embedded in IPv6 (mapped, compatible, NAT64, 6to4).
func Forbidden(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a), v4compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
			if why := Forbidden(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
				return "embedded " + why
			}
		case sixToFour.Contains(a):
			if why := Forbidden(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return "embedded " + why
			}
		case nat64Loc.Contains(a):
			return "local-use NAT64 address"
		}
	}
	switch {
	case !a.IsValid():
		return "invalid address"
	case a.IsLoopback():
		return "loopback address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast():
		return "link-local address"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	for _, p := range forbiddenPrefixes {
		if p.Contains(a) {
			return "reserved address"
		}
	}
	return ""
}

// Refusal says why nothing a sandbox asks for may reach a (the egress
// proxy, the secrets broker, webhook deliveries), or "" if it may: a
// Forbidden address, or one of local, this host's own addresses (from the
// host itself even its public ones reach what it binds to every address,
// past firewalls of outside traffic). The reason is a noun phrase with its
// article ("a private address"), for the callers' own sentences.
func Refusal(a netip.Addr, local []netip.Addr) string {
	a = a.Unmap()
	if why := Forbidden(a); why != "" {
		if strings.ContainsRune("aeiou", rune(why[0])) {
			return "an " + why
		}
		return "a " + why
	}
	if slices.Contains(local, a) {
		return "one of this host's own addresses"
	}
	return ""
}
