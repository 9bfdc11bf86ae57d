package egress

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resolver looks up the addresses of a host; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc dials a network address, like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Guard checks destinations and dials them. Use its DialContext as the
// DialContext of every transport that reaches the outside (proxied requests
// and robots.txt fetches alike). The zero Guard allows every valid address;
// BlockPrivate turns on the default policy. A Guard must not be modified
// while in use.
type Guard struct {
	// BlockPrivate refuses every address whose Class is not Public.
	BlockPrivate bool
	// AllowNetworks are exceptions to BlockPrivate (an operator's internal
	// service, a test's loopback origin).
	AllowNetworks []netip.Prefix
	// DenyHosts are host globs (path.Match syntax, lower-case hosts) that
	// are always refused; AllowHosts, when not empty, are the only hosts
	// allowed. Both apply to the name asked for, before resolving.
	DenyHosts, AllowHosts []string
	// DenyLists are host lists read from files (egress.deny_hosts_files),
	// refused like DenyHosts; nil means none. Unlike the Guard, they may
	// change while in use (DenyLists.Refresh).
	DenyLists *DenyLists
	// Self are the proxy's own listening addresses: connecting to them would
	// loop requests through the proxy.
	Self []netip.AddrPort
	// AllowPorts are the only destination ports allowed (egress.allow_ports),
	// checked on every connection; empty allows any. TunnelPorts are the
	// ports a tunnel that is not intercepted may reach
	// (egress.tunnel_ports; CheckPort); empty allows none.
	AllowPorts, TunnelPorts []uint16
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to the checked IP literal; nil means a net.Dialer with
	// DialTimeout.
	Dial DialFunc
	// DialTimeout bounds each connection attempt when Dial is nil
	// (default 10s).
	DialTimeout time.Duration
}

// DeniedError reports a destination the guard refused.
type DeniedError struct {
	Host  string     // as asked for
	IP    netip.Addr // the offending address
	Class Class
	// Listed is the line of a deny list that refused Host (Class
	// ListedHost).
	Listed DenyMatch
}

// Error says which host was refused and why.
func (e *DeniedError) Error() string {
	if e.Class == ListedHost {
		return fmt.Sprintf("egress denied: %s (deny list %s:%d: %s)", e.Host, e.Listed.File, e.Listed.Line, e.Listed.Entry)
	}
	if !e.IP.IsValid() {
		return fmt.Sprintf("egress denied: %s (%s)", e.Host, e.Class)
	}
	return fmt.Sprintf("egress denied: %s resolves to %s (%s)", e.Host, e.IP, e.Class)
}

// PortError reports a destination port the port rules refuse.
type PortError struct {
	Port uint16
	// Tunnel: the port is not open to tunnels without interception
	// (TunnelPorts); otherwise it is not in AllowPorts.
	Tunnel bool
}

// Error names the port and the rule.
func (e *PortError) Error() string {
	if e.Tunnel {
		return fmt.Sprintf("port %d is not open to tunnels without interception (egress.tunnel_ports)", e.Port)
	}
	return fmt.Sprintf("port %d is not allowed (egress.allow_ports)", e.Port)
}

// CheckPort applies AllowPorts to every destination and, for a tunnel that
// is not intercepted (blindTunnel), TunnelPorts; it returns a *PortError.
func (g *Guard) CheckPort(port uint16, blindTunnel bool) error {
	if len(g.AllowPorts) > 0 && !slices.Contains(g.AllowPorts, port) {
		return &PortError{Port: port}
	}
	if blindTunnel && !slices.Contains(g.TunnelPorts, port) {
		return &PortError{Port: port, Tunnel: true}
	}
	return nil
}

// CheckName applies the host lists to a host name (or IP literal) as asked
// for, before any lookup.
func (g *Guard) CheckName(host string) error {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if matchAny(g.DenyHosts, host) {
		return &DeniedError{Host: host, Class: DeniedHost}
	}
	if m, ok := g.DenyLists.Lookup(host); ok {
		return &DeniedError{Host: host, Class: ListedHost, Listed: m}
	}
	if len(g.AllowHosts) > 0 && !matchAny(g.AllowHosts, host) {
		return &DeniedError{Host: host, Class: NotAllowedHost}
	}
	return nil
}

func matchAny(globs []string, host string) bool {
	for _, glob := range globs {
		if ok, _ := path.Match(glob, host); ok {
			return true
		}
	}
	return false
}

// checkSelf refuses the proxy's own listening addresses.
func (g *Guard) checkSelf(host string, ip netip.Addr, port uint16) error {
	for _, s := range g.Self {
		if s.Port() == port && s.Addr().Unmap() == ip.Unmap() {
			return &DeniedError{Host: host, IP: ip, Class: SelfAddress}
		}
	}
	return nil
}

// Check returns a *DeniedError if ip may not be connected to.
func (g *Guard) Check(host string, ip netip.Addr) error {
	c := Classify(ip)
	switch {
	case c == Unparseable:
		return &DeniedError{Host: host, IP: ip, Class: c}
	case c == Public || !g.BlockPrivate:
		return nil
	}
	for _, p := range g.AllowNetworks {
		if p.Contains(ip.Unmap()) {
			return nil
		}
	}
	return &DeniedError{Host: host, IP: ip, Class: c}
}

// CheckHost resolves host and returns a *DeniedError if any of its
// addresses may not be connected to, so that a request can be refused before
// anything is sent (a CONNECT before its 200). DialContext checks again: the
// answer may change in between, and only the dial-time check is binding.
func (g *Guard) CheckHost(ctx context.Context, host string, port uint16) error {
	if err := g.CheckName(host); err != nil {
		return err
	}
	ips, err := g.resolve(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if err := g.Check(host, ip); err != nil {
			return err
		}
		if err := g.checkSelf(host, ip, port); err != nil {
			return err
		}
	}
	return nil
}

// DialContext refuses a port AllowPorts does not list, resolves addr's host
// once, refuses the connection if any of its addresses is denied, and otherwise dials the checked addresses in turn
// by IP literal, so the address connected to is the one that was checked.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port: %w", addr, err)
	}
	if err := g.CheckPort(uint16(port), false); err != nil {
		return nil, err
	}
	if err := g.CheckName(host); err != nil {
		return nil, err
	}
	ips, err := g.resolve(ctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	for _, ip := range ips {
		if err := g.Check(host, ip); err != nil {
			return nil, err
		}
		if err := g.checkSelf(host, ip, uint16(port)); err != nil {
			return nil, err
		}
	}
	dial := g.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: cmp.Or(g.DialTimeout, 10*time.Second)}
		dial = d.DialContext
	}
	var firstErr error
	for _, ip := range ips {
		conn, err := dial(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// Lookup resolves host as the guard does before it checks and dials (an
// IP literal is itself).
func (g *Guard) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return g.resolve(ctx, "tcp", host)
}

func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ipNet := "ip"
	switch network {
	case "tcp4", "udp4":
		ipNet = "ip4"
	case "tcp6", "udp6":
		ipNet = "ip6"
	}
	ips, err := r.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("no addresses for %s", host)
	}
	return ips, nil
}
