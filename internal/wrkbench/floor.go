package main

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// The net/http floor is the least a forward proxy built on net/http's
// server and httputil.ReverseProxy does per request: the server parses
// it, ReverseProxy strips the hop-by-hop fields, sends it with the tuned
// transport and copies the response back. An intercepted CONNECT is
// hijacked, its TLS handshake made with a cached leaf, and the
// connection handed to a second net/http server serving the same
// ReverseProxy, as robotsgate does. Its copy buffers are pooled. No decision, no log, no limits: what
// it costs is what any proxy that keeps those two pays before its own
// work.

// floorTarget is the CONNECT authority of an intercepted connection, in
// its requests' contexts.
type floorTarget struct{}

// newFloor returns the floor's handler for the proxy port.
func newFloor(o options) (http.Handler, error) {
	tr, err := newTransport(o)
	if err != nil {
		return nil, err
	}
	m, err := mitmMinter(o)
	if err != nil {
		return nil, err
	}
	errs := log.New(io.Discard, "", 0)
	buffers := &bufferPool{}
	plain := &httputil.ReverseProxy{
		Rewrite:    func(*httputil.ProxyRequest) {}, // absolute-form: the URL is the target already
		Transport:  tr,
		ErrorLog:   errs,
		BufferPool: buffers,
	}
	if m == nil {
		return plain, nil
	}
	tunnels := &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	inner := &http.Server{
		Handler: &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme = "https"
				pr.Out.URL.Host = pr.In.Context().Value(floorTarget{}).(string)
			},
			Transport:  tr,
			ErrorLog:   errs,
			BufferPool: buffers,
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, floorTarget{}, c.(*targetConn).target)
		},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          errs,
	}
	go inner.Serve(tunnels)
	configs := &tlsConfigs{m: m}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			plain.ServeHTTP(w, r)
			return
		}
		hc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		var c net.Conn = hc
		if brw.Reader.Buffered() > 0 { // a client that did not wait for the 200
			c = &bufferedConn{Conn: hc, r: brw.Reader}
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n"); err != nil {
			c.Close()
			return
		}
		tc := tls.Server(c, configs.get(r.Host))
		if err := tc.HandshakeContext(r.Context()); err != nil {
			tc.Close()
			return
		}
		tunnels.push(&targetConn{Conn: tc, target: r.Host})
	}), nil
}

// bufferPool lends ReverseProxy its copy buffers, which it otherwise
// allocates, 32 KiB, per response: the one tuning every careful user of
// it makes.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// targetConn is an intercepted connection and its CONNECT authority.
// Not a *tls.Conn, so the inner server speaks HTTP/1.1 only, as the
// leaf's ALPN offers.
type targetConn struct {
	net.Conn
	target string
}

// bufferedConn reads what the server buffered before the hijack first.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connListener hands the inner server the intercepted connections.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
