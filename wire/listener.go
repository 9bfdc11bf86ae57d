package wire

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// A client that speaks TLS to the proxy port was given an https:// proxy
// URL: a mistake as often as a choice (curl, Chromium and others support
// "HTTPS proxies"). ProxyListener tells it from the first byte of each
// connection and has it served over TLS. Every connection then reaches the
// proxy port's server as usual, behind the framing guard.

// ProxyListener is the proxy port's listener: each accepted connection
// waits for its first bytes on a goroutine of its own, not in Accept, and
// is handed on behind a framing guard, TLS terminated if it was TLS.
type ProxyListener struct {
	net.Listener
	headerTimeout time.Duration
	serveTLS      func(net.Conn) net.Conn
	log           *slog.Logger
	conns         chan net.Conn
	errs          chan error
	done          chan struct{}
	once          sync.Once
}

// NewProxyListener starts accepting connections from ln. It waits
// headerTimeout at most for a connection's first bytes (closing the
// connection, and logging at debug level to log, when none come). A
// connection whose first byte begins a TLS handshake record is given to
// serveTLS (with the bytes read put back), which returns the connection
// with TLS terminated, or nil when it failed or cannot be served (having
// closed the connection and said why). Every connection Accept returns
// is a *FramingGuard with the limit MaxHeadBytes.
func NewProxyListener(ln net.Listener, headerTimeout time.Duration, serveTLS func(net.Conn) net.Conn, log *slog.Logger) *ProxyListener {
	l := &ProxyListener{Listener: ln, headerTimeout: headerTimeout, serveTLS: serveTLS, log: log,
		conns: make(chan net.Conn), errs: make(chan error, 1), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

// acceptLoop hands on every connection until the listener is closed or
// stops: its Accept (listener.Listener) retries temporary errors itself.
func (l *ProxyListener) acceptLoop() {
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

// Accept returns the next connection, TLS terminated if it was TLS: the
// errors of the listener underneath come through, and net.ErrClosed once
// Close was called.
func (l *ProxyListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting: connections still being classified are closed
// instead of handed on.
func (l *ProxyListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// classify reads the first bytes of c (for at most headerTimeout, as a
// request head) and hands c on: behind TLS when they begin a TLS handshake
// record.
func (l *ProxyListener) classify(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(l.headerTimeout))
	buf := make([]byte, sniffBuf)
	n, err := c.Read(buf)
	c.SetReadDeadline(time.Time{})
	if n == 0 {
		l.log.Debug("proxy port: the client sent nothing", "client", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	conn := WithPrefix(c, buf[:n])
	if buf[0] == 0x16 { // a TLS handshake record (sniffProtocol)
		tc := l.serveTLS(conn)
		if tc == nil {
			return
		}
		conn = tc
	}
	l.push(NewFramingGuard(conn, MaxHeadBytes))
}

func (l *ProxyListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}
