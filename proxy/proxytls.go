package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"time"

	"github.com/robotsgate/robotsgate/wire"
)

// A client that speaks TLS to the proxy port (wire.ProxyListener) is served
// with a certificate from robotsgate's CA for the name the client asked
// for (its SNI, else the address it connected to); without a CA
// (mitm.enabled false) the connection is closed at once and the log says
// why.

// proxyTLS terminates a client's TLS on the proxy port and returns the
// TLS connection, or nil when it failed or cannot be served (then closed):
// the ProxyListener's serveTLS.
func (s *Server) proxyTLS(conn net.Conn) net.Conn {
	client := conn.RemoteAddr().String()
	if s.minter == nil {
		s.metrics.ProxyTLSRefused.Inc()
		s.log.Warn("a client speaks TLS to the proxy port, which has no certificate to answer with (mitm.enabled is false): use http:// in the proxy URL",
			"client", client)
		conn.Close()
		return nil
	}
	local := localHost(conn)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				return s.minter.Certificate(hello.ServerName)
			}
			return s.minter.Certificate(local)
		}}
	hc := wire.RecordHandshake(conn)
	tc := tls.Server(hc, cfg)
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.HandshakeContext(context.Background()); err != nil {
		s.clientTLSFailed(hc.Failure(err), client, "the proxy port (https:// proxy URL)", nil)
		conn.Close()
		return nil
	}
	conn.SetDeadline(time.Time{})
	hc.Done()
	s.metrics.ProxyTLSServed.Inc()
	return tc
}

// localHost is the address a client connected to, for the certificate of
// a client that sent no SNI.
func localHost(c net.Conn) string {
	ap, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return "127.0.0.1"
	}
	return ap.Addr().Unmap().String()
}
