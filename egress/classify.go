// Package egress decides which destinations robotsgate may connect to and
// enforces it where it cannot be bypassed: at dial time, on the resolved
// address, dialling exactly the address that was checked (so a DNS answer
// that changes between check and connect — rebinding — gains nothing).
// It also owns the deny lists of hosts (egress.deny_hosts_files).
//
// It answers only whether a destination may be reached, for every client
// and mode alike; it must not know about robots.txt or clients, and must
// never dial an address other than the one it checked.
package egress

import (
	"net/netip"
)

// Class is the kind of network an address belongs to.
type Class uint8

// Address classes. Every class but Public is refused by default.
const (
	Public Class = iota
	Unspecified
	Loopback
	Private     // RFC 1918, IPv6 site-local, local-use NAT64
	LinkLocal   // 169.254/16 (cloud metadata), fe80::/10
	CGNAT       // 100.64/10 (RFC 6598)
	ULA         // fc00::/7
	Multicast   // 224/4, ff00::/8
	Reserved    // documentation, benchmarking, future use, broadcast, discard
	Unparseable // the zero netip.Addr

	// Refusals by name or address rather than by network.
	DeniedHost     // matches egress.deny_hosts
	NotAllowedHost // matches none of egress.allow_hosts
	SelfAddress    // the proxy's own listening address
	ListedHost     // on a list of egress.deny_hosts_files
)

var classNames = [...]string{
	Public: "public", Unspecified: "unspecified", Loopback: "loopback", Private: "private",
	LinkLocal: "link-local", CGNAT: "cgnat", ULA: "ula", Multicast: "multicast",
	Reserved: "reserved", Unparseable: "unparseable",
	DeniedHost: "denied host", NotAllowedHost: "host not in allow list", SelfAddress: "the proxy itself",
	ListedHost: "host on a deny list",
}

// String returns the class name used in logs and refusals ("link-local").
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

type classPrefix struct {
	prefix netip.Prefix
	class  Class
}

func mustPrefixes(pairs ...any) []classPrefix {
	out := make([]classPrefix, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, classPrefix{netip.MustParsePrefix(pairs[i].(string)), pairs[i+1].(Class)})
	}
	return out
}

var v4Classes = mustPrefixes(
	"0.0.0.0/8", Unspecified,
	"10.0.0.0/8", Private,
	"100.64.0.0/10", CGNAT,
	"127.0.0.0/8", Loopback,
	"169.254.0.0/16", LinkLocal,
	"172.16.0.0/12", Private,
	"192.0.0.0/24", Reserved,
	"192.0.2.0/24", Reserved,
	"192.88.99.0/24", Reserved, // deprecated 6to4 relay anycast
	"192.168.0.0/16", Private,
	"198.18.0.0/15", Reserved,
	"198.51.100.0/24", Reserved,
	"203.0.113.0/24", Reserved,
	"224.0.0.0/4", Multicast,
	"240.0.0.0/4", Reserved, // includes 255.255.255.255
)

var v6Classes = mustPrefixes(
	"::/128", Unspecified,
	"::1/128", Loopback,
	"::/96", Reserved, // IPv4-compatible, deprecated
	"64:ff9b:1::/48", Private,
	"100::/64", Reserved,
	"2001:db8::/32", Reserved,
	"fc00::/7", ULA,
	"fe80::/10", LinkLocal,
	"fec0::/10", Private,
	"ff00::/8", Multicast,
)

// Classify returns the class of ip. IPv6 forms that carry an IPv4 address
// (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16 and Teredo
// 2001::/32) take the class of the embedded address when it is not public,
// so 6to4's 2002:7f00:1:: is loopback.
func Classify(ip netip.Addr) Class {
	if !ip.IsValid() {
		return Unparseable
	}
	ip = ip.WithZone("")
	if ip.Is4() || ip.Is4In6() {
		return classifyIn(v4Classes, ip.Unmap())
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if c := classifyIn(v4Classes, v4); c != Public {
			return c
		}
	}
	return classifyIn(v6Classes, ip)
}

func classifyIn(table []classPrefix, ip netip.Addr) Class {
	for _, cp := range table {
		if cp.prefix.Contains(ip) {
			return cp.class
		}
	}
	return Public
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
	teredo = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 returns the IPv4 address an IPv6 transition address routes
// to: the last 32 bits for NAT64, bits 16–47 for 6to4, the bit-inverted last
// 32 bits (the client) for Teredo.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixTo4.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case teredo.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}
