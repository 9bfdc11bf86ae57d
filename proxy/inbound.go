package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// A SOCKS5 or transparent connection opens a tunnel without a CONNECT on
// the proxy port. Its opening is judged by the one admission path as a
// CONNECT is (openTunnel), recorded in a record of its own (opening), and
// answered at its edge: a SOCKS5 reply, or the connection closed. The
// tunnel is then served as a CONNECT's: intercepted (serveTunnel), or
// passed blind to its destination (splice).

// opening is the record of a connection's opening, to authority
// (host:port), arriving via via: a CONNECT, as the audit names it, that
// opens its tunnel (status 200) unless it is refused.
func (s *Server) opening(conn net.Conn, authority, via string) *record {
	return &record{start: time.Now(), via: via, client: conn.RemoteAddr().String(), authority: authority, status: http.StatusOK}
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
