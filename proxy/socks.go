package proxy

import (
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/socks"
)

// ServeSOCKS accepts SOCKS5 clients on ln until Shutdown (RFC 1928,
// CONNECT only; RFC 1929 username/password for the clients entries with a
// user, checked as their Proxy-Authorization is). The connection that
// follows a CONNECT is served as a CONNECT tunnel's: judged by the one
// admission path when opened, then sniffed (TLS intercepted, plain HTTP
// judged request by request, anything else closed) or passed blind for
// mitm.skip_hosts. Domain names are resolved by robotsgate, so the egress
// guard sees them.
func (s *Server) ServeSOCKS(ln net.Listener) error {
	return s.acceptLoop(ln, "socks", s.serveSOCKS)
}

// serveSOCKS serves one SOCKS5 client: its handshake (bounded by
// timeouts.client_header, as a request head is), then its CONNECT.
func (s *Server) serveSOCKS(conn net.Conn) {
	st := s.settings()
	conn.SetDeadline(time.Now().Add(s.timeouts.ClientHeader.Duration()))
	var client *policy.Client
	var refused *Refusal
	srv := socks.Server{UserPass: st.hasUsers(), Check: func(c socks.Credentials) bool {
		cl, r := s.identifyClient(st, &admission{remote: remoteAddrIP(conn), proxyAuth: basicAuth(c)})
		client, refused = &cl, r
		return r == nil
	}}
	req, _, err := srv.Handshake(conn)
	switch {
	case errors.Is(err, socks.ErrAuthFailed):
		s.socksAuthRefused(conn, refused)
		conn.Close()
		return
	case err != nil:
		s.log.Debug("SOCKS5 handshake failed", "client", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	o, err := origin.New("https", req.Addr())
	if err != nil {
		socks.WriteReply(conn, socks.ReplyAddressNotSupported, netip.AddrPort{})
		conn.Close()
		return
	}
	s.openSOCKSTunnel(conn, o, client)
}

// socksAuthRefused audits a client whose SOCKS5 credentials were refused:
// no destination is known yet.
func (s *Server) socksAuthRefused(conn net.Conn, refused *Refusal) {
	s.observeOpening(openingRequest(conn, "", audit.ViaSOCKS), func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, refused)
	})
}

// openSOCKSTunnel judges a SOCKS5 CONNECT to o and answers it: refused
// (the refusal audited), intercepted, or blind.
func (s *Server) openSOCKSTunnel(conn net.Conn, o origin.Origin, client *policy.Client) {
	var upstream net.Conn
	s.observeOpening(openingRequest(conn, o.HostPort(), audit.ViaSOCKS), func(w http.ResponseWriter, r *http.Request) {
		op := s.openTunnel(r, tunnelOpening{origin: o, client: client})
		switch {
		case op.refusal != nil:
			socks.WriteReply(conn, socksReply(op.refusal), netip.AddrPort{})
			s.refuse(w, r, op.refusal)
			conn.Close()
		case op.intercept:
			if socks.WriteReply(conn, socks.ReplySucceeded, netip.AddrPort{}) != nil {
				conn.Close()
				return
			}
			s.serveTunnel(conn, &tunnelInfo{origin: o, connect: r, client: op.client, via: audit.ViaSOCKS})
		default:
			upstream = s.openBlind(w, r, conn, o.HostPort())
		}
	})
	if upstream != nil {
		splice(conn, upstream)
	}
}

// openBlind dials a SOCKS5 client's blind tunnel and answers the client.
func (s *Server) openBlind(w http.ResponseWriter, r *http.Request, conn net.Conn, addr string) net.Conn {
	upstream, err := s.dialBlind(r.Context(), addr, netip.AddrPort{})
	if err != nil {
		s.blindFailure(w, r, err)
		socks.WriteReply(conn, socks.ReplyHostUnreachable, netip.AddrPort{})
		conn.Close()
		return nil
	}
	if socks.WriteReply(conn, socks.ReplySucceeded, netip.AddrPort{}) != nil {
		upstream.Close()
		conn.Close()
		return nil
	}
	return upstream
}

// socksReply is the SOCKS5 reply code that stands for a refusal: the
// destination could not be reached (host unreachable), anything else not
// allowed by the rules.
func socksReply(r *Refusal) byte {
	if r.Decision() == audit.UpstreamError {
		return socks.ReplyHostUnreachable
	}
	return socks.ReplyNotAllowed
}

// basicAuth is SOCKS5 credentials as the Proxy-Authorization they stand for.
func basicAuth(c socks.Credentials) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.User+":"+c.Password))
}

func remoteAddrIP(conn net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// hasUsers reports whether a clients entry names a proxy user: SOCKS5
// clients are then offered username/password.
func (st *settings) hasUsers() bool {
	for _, c := range st.cfg.Clients {
		if c.User != "" {
			return true
		}
	}
	return false
}
