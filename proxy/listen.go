package proxy

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/robotsgate/robotsgate/audit"
)

// Connections reach net/http's servers through the listeners here: the
// proxy port's through proxyListener (proxyport.go), intercepted tunnels'
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

type guardKey struct{}

// connContext is both servers' ConnContext: it puts the connection's
// framing guard (HTTP/1.x) and, for the tunnel server, its tunnel into the
// context of every request on it.
func (l *tunnelListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*framingGuard); ok {
		ctx = context.WithValue(ctx, guardKey{}, g)
	}
	if l != nil {
		if t, ok := l.tunnels.LoadAndDelete(c); ok {
			ctx = context.WithValue(ctx, tunnelKey{}, t.(*tunnelInfo))
		}
	}
	return ctx
}

func guardOf(ctx context.Context) *framingGuard {
	g, _ := ctx.Value(guardKey{}).(*framingGuard)
	return g
}

// closeAfterResponse marks the response "Connection: close" at the last
// moment (a relay replaces the header map's contents before writing it).
// The proxy uses it once the framing guard has stopped reading heads on a
// connection, so that no further request can follow unchecked.
type closeAfterResponse struct{ http.ResponseWriter }

func (w closeAfterResponse) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.Header().Set("Connection", "close")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w closeAfterResponse) Write(p []byte) (int, error) {
	if w.Header().Get("Connection") == "" {
		w.Header().Set("Connection", "close")
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush, Hijack and deadlines.
func (w closeAfterResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w closeAfterResponse) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w closeAfterResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// guardFraming wraps a handler: it answers the framing guard's stand-in for
// a refused request (ambiguous framing, several Host fields, obs-fold) with 400, and
// makes every response on a connection the guard no longer reads heads of
// (after a request with a Transfer-Encoding, which net/http may read as
// chunked or, in HTTP/1.0, not at all: RFC 9112 §6.1) end that connection.
func guardFraming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := r.Header.Get(refuseHeader); reason != "" {
			msg, ok := refuseMessages[reason]
			if !ok { // a client sent the header itself
				msg = "The request has a header field reserved for robotsgate (" + refuseHeader + ")."
			}
			status := http.StatusBadRequest
			if reason == refuseTooLarge {
				status = http.StatusRequestHeaderFieldsTooLarge
			}
			w.Header().Set("Connection", "close")
			writeResponse(w, plainResponse(r, status, audit.BadRequest, "http_request_error", msg))
			return
		}
		if g := guardOf(r.Context()); g != nil && !g.watching() || len(r.TransferEncoding) > 0 {
			w = closeAfterResponse{w}
		}
		h.ServeHTTP(w, r)
	})
}
