package proxy

import (
	"errors"
	"net"
	"net/netip"
	"strconv"

	"github.com/robotsgate/robotsgate/pac"
)

// PAC implements admin.PACSource: the proxy auto-config file that sends
// browsers to this proxy (pac_proxy, else the address it listens on) and
// the hosts of upstream.no_proxy DIRECT. host is the name the admin
// listener was reached by, which stands in for an address on every
// interface (0.0.0.0, [::]).
func (s *Server) PAC(host string) ([]byte, error) {
	cfg := s.settings().cfg
	addr := cfg.PACProxy
	if addr == "" {
		listen := cfg.Listen
		if l := s.listening.Load(); l != nil {
			listen = *l // the port chosen for listen ...:0
		}
		ap, err := netip.ParseAddrPort(listen)
		switch {
		case err != nil:
			return nil, errors.New("the proxy's address is not an IP address and port: set pac_proxy")
		case ap.Addr().IsUnspecified() && host == "":
			return nil, errors.New("the proxy listens on every address and the request names no host: set pac_proxy")
		case ap.Addr().IsUnspecified():
			addr = net.JoinHostPort(host, strconv.Itoa(int(ap.Port())))
		default:
			addr = ap.String()
		}
	}
	return pac.File(addr, cfg.Upstream.NoProxy), nil
}
