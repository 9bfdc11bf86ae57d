package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
)

// A SOCKS5 or transparent connection opens a tunnel without a CONNECT on
// the proxy port. robotsgate makes up the CONNECT such an opening stands
// for, so that it is judged (openTunnel), logged and audited (observe)
// exactly as a CONNECT is, and then serves the tunnel as a CONNECT's:
// intercepted (serveTunnel), or passed blind to its destination (splice).

// openingRequest returns the CONNECT to authority (host:port) that a
// connection's opening stands for, marked with how it arrived.
func openingRequest(conn net.Conn, authority, via string) *http.Request {
	req := &http.Request{
		Method: http.MethodConnect, URL: &url.URL{Host: authority}, Host: authority, RequestURI: authority,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		RemoteAddr: conn.RemoteAddr().String(),
	}
	return req.WithContext(context.WithValue(context.Background(), viaKey{}, via))
}

// observeOpening runs open on an opening's CONNECT as the proxy port runs
// a CONNECT: what open writes to w (a refusal) is what the audit record
// says was answered, though the client, speaking SOCKS5 or nothing at
// all, is told otherwise.
func (s *Server) observeOpening(req *http.Request, open func(w http.ResponseWriter, r *http.Request)) {
	s.observe(http.HandlerFunc(open)).ServeHTTP(&openingWriter{header: http.Header{}}, req)
}

// openingWriter takes the response to an opening's CONNECT for the audit
// record; nothing of it is sent.
type openingWriter struct{ header http.Header }

func (w *openingWriter) Header() http.Header         { return w.header }
func (w *openingWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *openingWriter) WriteHeader(int)             {}

// dialBlind connects a blind tunnel to addr (host:port), the one dial of
// every blind tunnel (a CONNECT's through goproxy's ConnectDialWithReq,
// a SOCKS5 client's, a transparent connection's): through the parent
// proxy when it carries host, else through the egress guard, to pin when
// valid (a transparent client's original destination).
func (s *Server) dialBlind(ctx context.Context, addr string, pin netip.AddrPort) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	if p := s.settings().parent; p.carries(host) {
		return s.connectThroughParent(ctx, p, addr)
	}
	if pin.IsValid() {
		addr = pin.String()
	}
	return s.dial(ctx, "tcp", addr)
}

// splice copies between a blind tunnel's client and upstream connections
// until both directions end (each end half-closed after its direction's
// EOF), or either fails; then it closes both.
func splice(client, upstream net.Conn) {
	var wg sync.WaitGroup
	var once sync.Once
	closeBoth := func() { once.Do(func() { client.Close(); upstream.Close() }) }
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil && !errors.Is(err, net.ErrClosed) {
			closeBoth()
			return
		}
		if hc, ok := dst.(interface{ CloseWrite() error }); !ok || hc.CloseWrite() != nil {
			closeBoth()
		}
	}
	wg.Add(2)
	go copyHalf(upstream, client)
	go copyHalf(client, upstream)
	wg.Wait()
	closeBoth()
}

// blindFailure renders a blind tunnel that could not be dialled, for the
// opening's audit record.
func (s *Server) blindFailure(w http.ResponseWriter, r *http.Request, err error) {
	s.refuse(w, r, s.upstream.failure(r, err))
}

// listeners are the SOCKS5 and transparent listeners, closed by Shutdown.
type listeners struct {
	mu     sync.Mutex
	lns    []net.Listener
	closed bool
}

// add registers ln; false when the server is shut down already.
func (l *listeners) add(ln net.Listener) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.lns = append(l.lns, ln)
	return true
}

func (l *listeners) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, ln := range l.lns {
		ln.Close()
	}
}

// acceptLoop accepts connections on ln, guarded as this kind of listener
// (Guard: temporary errors retried, connections capped), and serves each
// with serve until ln is closed (nil) or stops for good (its error, which
// Ready reports).
func (s *Server) acceptLoop(ln net.Listener, kind string, serve func(net.Conn)) error {
	g := s.guard(ln, kind)
	if !s.inbound.add(g) {
		g.Close()
		return nil
	}
	for {
		conn, err := g.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		go serve(conn)
	}
}
