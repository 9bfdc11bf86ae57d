// Package floorproxy is the net/http floor: the least a forward proxy
// built on net/http's server and httputil.ReverseProxy does per request.
// The server parses a request, ReverseProxy strips the hop-by-hop fields,
// sends it with the transport it is given and copies the response back,
// its copy buffers pooled. An intercepted CONNECT is hijacked, its TLS
// handshake made with a leaf from a certs.Minter (one tls.Config per host,
// made once), and the connection handed to a second net/http server
// serving the same ReverseProxy, as robotsgate does. No decision, no log,
// no limits: what it costs is what any proxy that keeps those two pays
// before its own work. A benchmark reference (internal/wrkbench,
// BenchmarkProxy), never part of robotsgate.
package floorproxy

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

	"github.com/robotsgate/robotsgate/certs"
)

// floorTarget is the CONNECT authority of an intercepted connection, in
// its requests' contexts.
type floorTarget struct{}

// Proxy is the floor's handler for a proxy port.
type Proxy struct {
	plain   *httputil.ReverseProxy
	configs *tlsConfigs   // nil: CONNECT is refused
	tunnels *connListener // intercepted connections, for inner
	inner   *http.Server
}

// New returns the floor sending requests with tr; with m, CONNECT is
// intercepted with leaves from m, else refused (405). Close stops the
// server of intercepted connections.
func New(tr http.RoundTripper, m *certs.Minter) *Proxy {
	errs := log.New(io.Discard, "", 0)
	buffers := &bufferPool{}
	p := &Proxy{plain: &httputil.ReverseProxy{
		Rewrite:    func(*httputil.ProxyRequest) {}, // absolute-form: the URL is the target already
		Transport:  tr,
		ErrorLog:   errs,
		BufferPool: buffers,
	}}
	if m == nil {
		return p
	}
	p.configs = &tlsConfigs{m: m}
	p.tunnels = &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	p.inner = &http.Server{
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
	go p.inner.Serve(p.tunnels)
	return p
}

// ServeHTTP forwards a request in absolute form, or intercepts a CONNECT.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.plain.ServeHTTP(w, r)
		return
	}
	if p.configs == nil {
		http.Error(w, "CONNECT is not intercepted", http.StatusMethodNotAllowed)
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
	tc := tls.Server(c, p.configs.get(r.Host))
	if err := tc.HandshakeContext(r.Context()); err != nil {
		tc.Close()
		return
	}
	p.tunnels.push(&targetConn{Conn: tc, target: r.Host})
}

// Close stops serving intercepted connections and closes them.
func (p *Proxy) Close() error {
	if p.inner == nil {
		return nil
	}
	return p.inner.Close()
}

// tlsConfigs hands out one server tls.Config per CONNECT host, made once.
type tlsConfigs struct {
	m       *certs.Minter
	configs sync.Map // host -> *tls.Config
}

func (t *tlsConfigs) get(host string) *tls.Config {
	if c, ok := t.configs.Load(host); ok {
		return c.(*tls.Config)
	}
	c, _ := t.configs.LoadOrStore(host, t.m.TLSConfigFor(host))
	return c.(*tls.Config)
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
