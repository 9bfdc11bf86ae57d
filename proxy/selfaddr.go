package proxy

import (
	"net"
	"net/netip"
	"slices"
)

// robotsgate's own addresses, which the egress guard refuses.

// selfAddrs returns the addresses the proxy listens on, every local
// interface address for an unspecified listen address.
func (s *Server) selfAddrs() []netip.AddrPort {
	p := s.self.Load()
	if p == nil {
		return nil
	}
	return *p
}

func (s *Server) setSelf(addr net.Addr) { s.AddSelf(addr) }

// AddSelf adds an address robotsgate listens on (the proxy's, the admin
// listener's; every local interface's for an unspecified one) to those
// the egress guard refuses: a request to it would loop through the proxy,
// or read the admin listener through it.
func (s *Server) AddSelf(addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return
	}
	add := []netip.AddrPort{ap}
	if ap.Addr().IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil {
					add = append(add, netip.AddrPortFrom(p.Addr(), ap.Port()))
				}
			}
		}
	}
	s.selfMu.Lock()
	defer s.selfMu.Unlock()
	self := append(slices.Clone(s.selfAddrs()), add...)
	s.self.Store(&self)
	for { // the running settings with a guard that knows self (a Reload from now on reads s.self)
		old := s.settings()
		g := *old.guard
		g.Self = self
		next := *old
		next.guard = &g
		if s.current.CompareAndSwap(old, &next) {
			return
		}
	}
}
