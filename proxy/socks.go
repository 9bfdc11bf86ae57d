package proxy

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/refusal"
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
	var refused *refusal.Refusal
	srv := socks.Server{UserPass: st.hasUsers(), Check: func(c socks.Credentials) bool {
		cl, r := s.identifyClient(st, &admission{remote: remoteAddrIP(conn), proxyAuth: basicAuth(c)})
		client, refused = &cl, r
		return r == nil
	}}
	req, _, err := srv.Handshake(conn)
	switch {
	case errors.Is(err, socks.ErrAuthFailed):
		// Audited with no destination: none is known yet. The handshake
		// has answered the client already (RFC 1929's failure status).
		rec := s.opening(conn, "", audit.ViaSOCKS)
		rec.answered(refused)
		s.finish(rec, nil)
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
	rec := s.opening(conn, o.HostPort(), audit.ViaSOCKS)
	up := s.openSOCKSTunnel(conn, o, client, rec)
	s.finish(rec, nil)
	if up != nil {
		splice(conn, up)
	}
}

// openSOCKSTunnel judges a SOCKS5 CONNECT to o and answers it: refused,
// intercepted (served until it is handed over), or blind (the upstream
// connection returned, to splice once the opening is recorded).
func (s *Server) openSOCKSTunnel(conn net.Conn, o origin.Origin, client *policy.Client, rec *record) net.Conn {
	ctx := context.Background()
	op := s.openTunnel(ctx, tunnelOpening{origin: o, clientAddr: rec.client, remote: remoteAddrIP(conn), client: client}, rec)
	switch {
	case op.refusal != nil:
		s.refuseSOCKS(conn, rec, op.refusal)
		return nil
	case op.intercept:
		if socks.WriteReply(conn, socks.ReplySucceeded, netip.AddrPort{}) != nil {
			conn.Close()
			return nil
		}
		s.serveTunnel(conn, &tunnelInfo{origin: o, clientAddr: rec.client, client: op.client, via: audit.ViaSOCKS}, rec)
		return nil
	}
	up, err := s.upstream.DialBlind(ctx, o.HostPort(), netip.AddrPort{})
	if err != nil {
		s.refuseSOCKS(conn, rec, s.upstreamFailure(ctx, o.HostPort(), err))
		return nil
	}
	if socks.WriteReply(conn, socks.ReplySucceeded, netip.AddrPort{}) != nil {
		up.Close()
		conn.Close()
		return nil
	}
	return up
}

// refuseSOCKS answers a SOCKS5 CONNECT with the reply that stands for the
// refusal r, which its record says it was answered with, and closes the
// connection.
func (s *Server) refuseSOCKS(conn net.Conn, rec *record, r *refusal.Refusal) {
	rec.answered(r)
	socks.WriteReply(conn, socksReply(r), netip.AddrPort{})
	conn.Close()
}

// socksReply is the SOCKS5 reply code that stands for a refusal: the
// destination could not be reached (host unreachable), anything else not
// allowed by the rules.
func socksReply(r *refusal.Refusal) byte {
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
