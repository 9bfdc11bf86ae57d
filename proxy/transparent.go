package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/wire"
)

// Transparent listeners receive connections the kernel redirected to them
// (iptables or nftables REDIRECT): the client connected to an origin's
// address, not to robotsgate. The connection is served as an intercepted
// tunnel to that address (its original destination), told by its first
// bytes: TLS is intercepted with a certificate minted for the SNI (the
// address when there is none), or passed blind to the destination for
// mitm.skip_hosts; plain HTTP is served request by request, each judged
// as http://Host; anything else is closed. Every request is judged by the
// one admission path as a request on the proxy port is (its client by
// address), and the name it is judged by must resolve to the original
// destination, which every upstream connection goes to.

// ServeTransparent accepts connections redirected to ln until Shutdown.
func (s *Server) ServeTransparent(ln net.Listener) error {
	return s.acceptLoop(ln, "transparent", s.serveTransparent)
}

func (s *Server) serveTransparent(conn net.Conn) {
	dest, err := s.originalDst(conn)
	if err == nil && dest.String() == conn.LocalAddr().String() {
		err = errors.New("the connection was not redirected: it is addressed to the transparent listener itself")
	}
	if err != nil {
		s.log.Warn("transparent connection closed: its original destination is unknown", "client", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if s.refuseSelfLoop(conn, dest) {
		return
	}
	proto, first, err := wire.Sniff(conn, s.timeouts.ClientHeader.Duration())
	conn = wire.WithPrefix(conn, first)
	switch proto {
	case wire.ProtoTLS:
		s.serveTransparentTLS(conn, dest)
	case wire.ProtoHTTP:
		s.pushTunnel(wire.NewFramingGuard(conn, maxHeaderBytes), &tunnelInfo{origin: destOrigin("http", dest.Addr().String(), dest),
			clientAddr: conn.RemoteAddr().String(), via: audit.ViaTransparent, dest: dest, byHost: true})
	default:
		rec := s.opening(conn, dest.String(), audit.ViaTransparent)
		s.log.Info("transparent connection closed: the client speaks neither TLS nor HTTP", "dest", dest.String(),
			"client", rec.client, "first_bytes", fmt.Sprintf("%q", first), "err", err)
		rec.refine(audit.UnknownProtocol, fmt.Sprintf("the client's first bytes are neither TLS nor HTTP: %q", first))
		s.finish(rec, nil)
		conn.Close()
	}
}

// destOrigin is scheme://host:port with dest's port (host validated by
// the caller, or an address).
func destOrigin(scheme, host string, dest netip.AddrPort) origin.Origin {
	o, err := origin.New(scheme, net.JoinHostPort(host, strconv.Itoa(int(dest.Port()))))
	if err != nil {
		o, _ = origin.New(scheme, dest.String())
	}
	return o
}

// errBlind ends the handshake of a TLS connection that is passed blind.
var errBlind = errors.New("passed blind (mitm.skip_hosts)")

// serveTransparentTLS intercepts a TLS connection, or passes it blind to
// its destination when its SNI is not intercepted.
func (s *Server) serveTransparentTLS(conn net.Conn, dest netip.AddrPort) {
	hc := wire.RecordHandshake(conn)
	var o origin.Origin
	blind := false
	cfg := &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		o = destOrigin("https", dest.Addr().String(), dest)
		if hello.ServerName != "" {
			o = destOrigin("https", hello.ServerName, dest)
		}
		if s.minter == nil || !s.settings().mitmHost(o.Host) {
			blind = true
			hc.Mute()
			return nil, errBlind
		}
		c := s.minter.TLSConfigFor(o.Host)
		c.NextProtos = tunnelALPN
		return c, nil
	}}
	tlsConn := tls.Server(hc, cfg)
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tlsConn.HandshakeContext(context.Background())
	conn.SetDeadline(time.Time{})
	switch {
	case blind:
		s.passTransparent(conn, hc.Received(), o, dest)
	case err != nil:
		rec := s.opening(conn, authorityOf(o, dest), audit.ViaTransparent)
		s.clientTLSFailed(hc.Failure(err), rec.client, o.Host, rec)
		s.finish(rec, nil)
		conn.Close()
	default:
		hc.Done()
		s.pushTLS(tlsConn, &tunnelInfo{origin: o, clientAddr: conn.RemoteAddr().String(), via: audit.ViaTransparent, dest: dest})
	}
}

// authorityOf is o's host:port, or dest when o is not known (the client
// sent no ClientHello robotsgate could read).
func authorityOf(o origin.Origin, dest netip.AddrPort) string {
	if o.Host == "" {
		return dest.String()
	}
	return o.HostPort()
}

// passTransparent judges a TLS connection that is not intercepted as a
// blind opening to o (its host only), and if allowed connects it to dest,
// replaying what the client sent (hello: its ClientHello), and copies
// between them.
func (s *Server) passTransparent(conn net.Conn, hello []byte, o origin.Origin, dest netip.AddrPort) {
	rec := s.opening(conn, authorityOf(o, dest), audit.ViaTransparent)
	up := s.openTransparent(conn, hello, o, dest, rec)
	s.finish(rec, nil)
	if up == nil {
		conn.Close() // the transparent edge's answer to a refusal
		return
	}
	splice(conn, up)
}

// openTransparent judges a transparent connection's blind opening and
// dials its destination; nil when it is refused or the dial failed (what
// the record says).
func (s *Server) openTransparent(conn net.Conn, hello []byte, o origin.Origin, dest netip.AddrPort, rec *record) net.Conn {
	ctx := context.Background()
	op := s.openTunnel(ctx, tunnelOpening{origin: o, dest: dest, clientAddr: rec.client, remote: remoteAddrIP(conn)}, rec)
	if op.refusal != nil {
		rec.answered(op.refusal)
		return nil
	}
	if len(hello) >= wire.MaxHandshakeRecord {
		rec.refine(audit.BadRequest, "the ClientHello is too long to pass on")
		return nil
	}
	c, err := s.upstream.DialBlind(ctx, o.HostPort(), dest)
	if err == nil {
		if _, err = c.Write(hello); err != nil {
			c.Close()
		}
	}
	if err != nil {
		rec.answered(s.upstreamFailure(ctx, o.HostPort(), err))
		return nil
	}
	return c
}

// originalDst is where a redirected client connected.
func (s *Server) originalDst(conn net.Conn) (netip.AddrPort, error) {
	dest, err := s.origDst(conn)
	return netip.AddrPortFrom(dest.Addr().Unmap(), dest.Port()), err
}

// selfLoopLogEvery spaces the warnings of transparent self-loops.
const selfLoopLogEvery = 10 * time.Second

// selfLoops counts the transparent connections refused as robotsgate's
// own, and remembers when one was last logged (Unix nanoseconds).
type selfLoops struct {
	n      atomic.Uint64
	logged atomic.Int64
}

// refuseSelfLoop closes a transparent connection that comes from one of
// robotsgate's own upstream connections, reporting whether it did.
func (s *Server) refuseSelfLoop(conn net.Conn, dest netip.AddrPort) bool {
	if !s.own.IsOwn(remoteAddrPort(conn), dest) {
		return false
	}
	conn.Close()
	s.loops.n.Add(1)
	now := time.Now().UnixNano()
	if last := s.loops.logged.Load(); now-last >= int64(selfLoopLogEvery) && s.loops.logged.CompareAndSwap(last, now) {
		s.log.Warn("a transparent connection came from robotsgate's own upstream connection and was closed: "+
			"the firewall rule redirects robotsgate's own traffic back to it; set transparent.mark and exempt it "+
			"(meta mark ... return), or exempt robotsgate's user (meta skuid, -m owner --uid-owner)",
			"client", conn.RemoteAddr().String(), "dest", dest.String(), "loops", s.loops.n.Load())
	}
	return true
}

// remoteAddrPort is conn's peer, unmapped; invalid when it is not an IP
// address and port.
func remoteAddrPort(conn net.Conn) netip.AddrPort {
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
