package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/wire"
)

// A client that speaks TLS to the proxy port was given an https:// proxy
// URL: a mistake as often as a choice (curl, Chromium and others support
// "HTTPS proxies"). proxyListener tells it from the first byte of each
// connection and serves it over TLS, with a certificate from robotsgate's
// CA for the name the client asked for (its SNI, else the address it
// connected to); without a CA (mitm.enabled false) it closes the
// connection at once and says why. Every connection then reaches the
// proxy port's server as usual, behind the framing guard.

// proxyListener is the proxy port's listener: each accepted connection
// waits for its first bytes on a goroutine of its own, not in Accept.
type proxyListener struct {
	net.Listener
	s     *Server
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
}

func newProxyListener(ln net.Listener, s *Server) *proxyListener {
	l := &proxyListener{Listener: ln, s: s, conns: make(chan net.Conn), errs: make(chan error, 1), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

// acceptLoop hands on every connection until the listener is closed or
// stops: its Accept (listener.Listener) retries temporary errors itself.
func (l *proxyListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
			}
			return
		}
		go l.classify(c)
	}
}

// Accept returns the next connection, TLS terminated if it was TLS.
func (l *proxyListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (l *proxyListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// classify reads the first bytes of c (for at most
// timeouts.client_header, as a request head) and hands c on: behind TLS
// when they begin a TLS handshake record.
func (l *proxyListener) classify(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(l.s.timeouts.ClientHeader.Duration()))
	buf := make([]byte, sniffBuf)
	n, err := c.Read(buf)
	c.SetReadDeadline(time.Time{})
	if n == 0 {
		l.s.log.Debug("proxy port: the client sent nothing", "client", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	var conn net.Conn = wire.WithPrefix(c, buf[:n])
	if buf[0] == 0x16 { // a TLS handshake record (sniffProtocol)
		tc := l.s.proxyTLS(conn)
		if tc == nil {
			return
		}
		conn = tc
	}
	l.push(wire.NewFramingGuard(conn, maxHeaderBytes))
}

func (l *proxyListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// proxyTLS terminates a client's TLS on the proxy port and returns the
// TLS connection, or nil when it failed or cannot be served (then closed).
func (s *Server) proxyTLS(conn net.Conn) *tls.Conn {
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
