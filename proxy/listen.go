package proxy

import (
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/wire"
)

// Connections reach net/http's servers through the listeners here: the
// proxy port's through wire.ProxyListener, intercepted tunnels'
// (CONNECT, SOCKS5, transparent) through tunnelListener. The framing guard
// sits between each HTTP/1.x connection and its server.

// tunnelListener hands the connections inside intercepted tunnels to the
// tunnel server, each with the tunnel it belongs to.
type tunnelListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	// tunnels maps a pushed connection to its tunnel until the server's
	// ConnContext takes it (tunnelContext). A map rather than a wrapper:
	// an HTTP/2 connection must reach the server as the *tls.Conn itself.
	tunnels sync.Map
}

func newTunnelListener() *tunnelListener {
	return &tunnelListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// push gives c, the inside of tunnel t, to the server; false once the
// listener is closed (the caller then closes c).
func (l *tunnelListener) push(c net.Conn, t *tunnelInfo) bool {
	l.tunnels.Store(c, t)
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		l.tunnels.Delete(c)
		return false
	}
}

func (l *tunnelListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tunnelListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *tunnelListener) Addr() net.Addr { return tunnelAddr{} }

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "tunnel" }
func (tunnelAddr) String() string  { return "intercepted tunnels" }

// connContext is both servers' ConnContext: it puts the connection's
// framing guard (HTTP/1.x) and, for the tunnel server, its tunnel into the
// context of every request on it.
func (l *tunnelListener) connContext(ctx context.Context, c net.Conn) context.Context {
	ctx = wire.WithGuard(ctx, c)
	if l != nil {
		if t, ok := l.tunnels.LoadAndDelete(c); ok {
			ctx = context.WithValue(ctx, tunnelKey{}, t.(*tunnelInfo))
		}
	}
	return ctx
}

// guardFraming wraps a way in's handler in the framing guard's checks
// (package wire): a request the guard refused is answered with the
// proxy's refusal, and every response on a connection the guard no longer
// reads heads of ends that connection.
func (s *Server) guardFraming(serve serveRecorded) serveRecorded {
	return func(w http.ResponseWriter, r *http.Request, rec *record) {
		if status, msg, refused := wire.Refused(r); refused {
			w.Header().Set("Connection", "close")
			s.refuse(w, r, rec, refusal.BadRequest(msg).WithStatus(status))
			return
		}
		serve(wire.CloseAfter(w, r), r, rec)
	}
}
